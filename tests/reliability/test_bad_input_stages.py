"""Each command that reads user text, run as a user runs it on one messy corpus (tests/reliability/messy.py).

Default policy: bad documents and junk files are skipped, counted by reason with file and position, exit 0;
a file that cannot be read fails with one line naming it (exit 1; 2 when it cannot even be opened).
`--on-error fail`: the first bad document fails with its file and position (exit 1). `--on-error skip`:
everything unreadable is skipped and counted. Always: documents in = used + skipped by reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from corpusprep.tokenize import VocabInfo
from tests.reliability.helpers import REPO, corpusprep, error_line
from tests.reliability.messy import CUT_COPIES, SCRIPTS, Messy, write_messy_corpus

pytestmark = pytest.mark.xdist_group("bad_input_stages")

STAGES = ("vocab", "sentences", "build-pairs")
MAX_SEQ_LENGTH = 128
# Per-document problems: reason -> where its example must point.
DOCUMENT_SKIPS = {
    "invalid_json": "b_lines.jsonl:2: not valid JSON (",
    "missing_text_field": "b_lines.jsonl:3: no field 'text'",
    "null_text": "b_lines.jsonl:4: field 'text' is null",
    "empty_document": "b_lines.jsonl:5: empty or whitespace-only document",
}
FILE_SKIPS = {"empty_file": ["e_empty.txt: empty file"], "binary": ["f_image.png: skipped: looks like PNG"]}
UNREADABLE_SKIPS = {
    "unreadable": ["x_cut.txt.gz: byte ", "x_cut.txt.xz: byte ", "y_locked.txt: cannot open: Permission"],
    "missing_text_column": ["z_no_text.parquet: no column 'text' (columns: body)"],
}


@pytest.fixture(scope="module")
def messy(tmp_path_factory) -> Messy:
    return write_messy_corpus(tmp_path_factory.mktemp("bad_input") / "messy")


@pytest.fixture(scope="module")
def vocab(messy) -> Path:
    """A cased vocab trained on the messy corpus by `corpusprep vocab` under the default policy (cased, so
    that Arabic marks and every script survive the normalizer)."""
    out = messy.root.parent / "vocab"
    done = corpusprep("vocab", *messy.per_document, "-o", out, "--vocab-size", "1000", "--cased")
    assert done.returncode == 0, done.stderr
    return out


def run_stage(stage: str, inputs: list, out: Path, vocab: Path, *options: str, deny: str | None = None):
    """`corpusprep STAGE` on `inputs`, writing under `out` (build-pairs tokenizes with `vocab`)."""
    if stage == "vocab":
        args = ["vocab", *inputs, "-o", out, "--vocab-size", "1000", "--cased"]
    elif stage == "sentences":
        args = ["sentences", *inputs, "-o", out / "sentences.txt", "--stats", out / "stats.json"]
    else:
        args = ["build-pairs", *inputs, "--vocab", vocab, "-o", out, "--workers", "1", "--no-progress",
                "--dupe-factor", "1", "--validation-fraction", "0", "--max-seq-length", str(MAX_SEQ_LENGTH)]
    return corpusprep(*args, *options, deny=deny)


def counts(stage: str, out: Path) -> tuple[dict, int, dict[str, int]]:
    """(read stats, documents used, documents skipped by reason) from the stage's own stats file."""
    if stage == "vocab":
        report = json.loads((out / "vocab_report.json").read_text())
        read, used, later = report["read_stats"], report["documents"]["used"], {}
    elif stage == "sentences":
        report = json.loads((out / "stats.json").read_text())
        read, used, later = report["read"], report["split"]["used"], report["split"]["skipped"]
    else:
        report = json.loads((out / "stats.json").read_text())
        read, used, later = report["read"], report["documents_used"], report["documents_skipped"]
    skipped = {**read["skipped"], **{reason: n for reason, n in later.items() if n}}
    return read, used, skipped


def assert_counts_add_up(read: dict, used: int, skipped: dict[str, int]) -> None:
    assert read["documents_seen"] == used + sum(skipped.values())
    assert read["documents_seen"] == read["documents"] + sum(read["skipped"].values())
    assert read["files_seen"] == read["files"] + sum(read["skipped_files"].values())


def assert_examples(read: dict, root: Path, expected: dict[str, list[str]]) -> None:
    for reason, wheres in expected.items():
        for where, example in zip(wheres, sorted(read["examples"][reason]), strict=True):
            assert example.startswith(f"{root}/{where}"), (reason, example)


@pytest.mark.parametrize("stage", STAGES)
def test_default_policy_skips_bad_documents_and_counts_them(stage, messy, vocab, tmp_path):
    done = run_stage(stage, messy.per_document, tmp_path, vocab)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    read, used, skipped = counts(stage, tmp_path)
    assert_counts_add_up(read, used, skipped)
    assert read["documents_seen"] == sum(messy.documents.values())
    assert skipped == dict.fromkeys(DOCUMENT_SKIPS, 1)  # nothing else lost: every good document used
    assert read["skipped_files"] == {"binary": 1, "empty_file": 1}
    assert_examples(read, messy.root, {k: [v] for k, v in DOCUMENT_SKIPS.items()} | FILE_SKIPS)
    # Repaired, not skipped: each repair counted and located.
    assert (read["invalid_utf8"], read["nul_bytes"]) == (2, 1)
    bad_byte = (messy.root / "c_invalid_utf8.txt").read_bytes().index(b"\xe9")
    assert read["examples"]["invalid_utf8"] == [f"{messy.root}/c_invalid_utf8.txt: byte {bad_byte}: invalid "
                                                "UTF-8 (2 sequence(s) in this block replaced by U+FFFD)"]
    assert read["examples"]["nul_bytes"] == [f"{messy.root}/d_nul.txt: byte 2: 1 NUL byte(s) removed"]
    # The summary at the end says the same.
    summary = " ".join(done.stderr.split())
    if stage == "vocab":
        assert f"from {used:,} documents ({sum(skipped.values())} skipped)" in summary
    else:
        assert f"{used:,} of {read['documents_seen']:,} documents (skipped: 1 empty_document" in summary


def test_no_newline_file_and_scripts_survive_sentences(messy, vocab, tmp_path):
    done = run_stage("sentences", messy.per_document, tmp_path, vocab)
    assert done.returncode == 0, done.stderr
    blocks = (tmp_path / "sentences.txt").read_text().split("\n\n")
    one_line = (messy.root / "h_one_line.txt").read_text()
    squeeze = "".join  # compare texts without whitespace: sentences are stripped, lines joined
    assert squeeze(blocks[-4].split()) == squeeze(one_line.split())  # 1.5 MiB, no newline: nothing lost
    assert len(blocks[-4].splitlines()) == one_line.count(". ")  # and split into its sentences
    for block, text in zip(blocks[-3:], SCRIPTS.values(), strict=True):
        assert squeeze(block.split()) == squeeze(text.split())


def test_build_pairs_truncates_the_long_sentence_and_keeps_every_script(messy, vocab, tmp_path):
    done = run_stage("build-pairs", messy.per_document, tmp_path, vocab)
    assert done.returncode == 0, done.stderr
    stats = json.loads((tmp_path / "stats.json").read_text())["splits"]["train"]
    info = VocabInfo.load(vocab)
    tokenizer = info.tokenizer()
    long_tokens = len(tokenizer.encode(messy.long_sentence + ".", add_special_tokens=False).ids)
    assert long_tokens > 10_000
    assert stats["sentences_truncated"] == 1  # only the 10,000-word sentence is longer than a pair
    assert stats["sentence_tokens_truncated"] == long_tokens - (MAX_SEQ_LENGTH - 3)

    pairs = pq.read_table(tmp_path / "train" / "part-00000-d0.parquet").to_pylist()
    assert max(len(p["tokens_a"]) + len(p["tokens_b"]) for p in pairs) <= MAX_SEQ_LENGTH - 3

    # CJK, Arabic and emoji reach the pairs whole: no [UNK], and every segment decodes to a run of its
    # document's text as BERT's normalizer leaves it (which only drops the zero-width joiner).
    def decode(ids: list[int]) -> str:
        assert info.unk_id not in ids
        return "".join(info.tokens[i].removeprefix("##") for i in ids)

    texts = {f"i_scripts.txt:{i}": "".join(tokenizer.normalizer.normalize_str(t).split())
             for i, t in enumerate(SCRIPTS.values())}
    seen: dict[str, str] = dict.fromkeys(texts, "")
    for pair in pairs:
        for doc, tokens in ((pair["doc_id"], pair["tokens_a"]), (pair["b_doc_id"], pair["tokens_b"])):
            if doc in texts:
                assert decode(tokens) in texts[doc]
                seen[doc] += decode(tokens)
    assert all(seen.values()), f"a script made no pair: {seen}"
    decoded = "".join(seen.values())
    for char in "中测本語한العربي😀👍🏽🇩🇪👩👧":
        assert char in decoded


@pytest.mark.parametrize("stage", STAGES)
def test_skip_policy_reads_past_every_unreadable_file(stage, messy, vocab, tmp_path):
    done = run_stage(stage, [messy.root], tmp_path, vocab, "--on-error", "skip", deny=messy.locked.name)
    assert done.returncode == 0, done.stderr
    read, used, skipped = counts(stage, tmp_path)
    assert_counts_add_up(read, used, skipped)
    assert skipped == dict.fromkeys(DOCUMENT_SKIPS, 1)
    assert read["skipped_files"] == {"binary": 1, "empty_file": 1, "unreadable": 3, "missing_text_column": 1}
    assert read["files_seen"] == len(messy.per_document) + len(messy.unreadable)
    assert_examples(read, messy.root, FILE_SKIPS | UNREADABLE_SKIPS)
    # What came out of the truncated streams before the cut is used, never more than they hold.
    cut = read["documents_seen"] - sum(messy.documents.values())
    assert 0 < cut < 2 * CUT_COPIES * messy.documents["a_clean.txt"]


@pytest.mark.parametrize("stage", STAGES)
def test_default_policy_fails_on_the_first_unreadable_file(stage, messy, vocab, tmp_path):
    done = run_stage(stage, [messy.root], tmp_path, vocab)
    assert done.returncode == 1
    message = rf"{messy.root}/x_cut\.txt\.gz: byte \d+: truncated or corrupt gz stream: "
    assert re.match(message, error_line(done))
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".txt", ".parquet") or "report" in p.name]


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        ("x_cut.txt.gz", 1, r"byte \d+: truncated or corrupt gz stream: .+"),
        ("x_cut.txt.xz", 1, r"byte \d+: truncated or corrupt xz stream: .+"),
        ("y_locked.txt", 2, r"cannot open: Permission denied"),
        ("z_no_text.parquet", 1, r"no column 'text' \(columns: body\)"),
    ],
)
def test_each_unreadable_file_fails_with_its_own_line(name, code, message, messy, vocab, tmp_path):
    done = run_stage("sentences", [messy.root / name], tmp_path, vocab, deny="y_locked.txt")
    assert done.returncode == code
    assert re.fullmatch(rf"{messy.root}/{re.escape(name)}: {message}", error_line(done))
    assert not (tmp_path / "sentences.txt").exists()


@pytest.mark.parametrize("stage", STAGES)
def test_fail_policy_stops_at_the_first_bad_document(stage, messy, vocab, tmp_path):
    done = run_stage(stage, messy.per_document, tmp_path, vocab, "--on-error", "fail")
    assert done.returncode == 1
    assert error_line(done).startswith(f"{messy.root}/b_lines.jsonl:2: not valid JSON (")
    assert len(done.stderr.strip().splitlines()) == 1  # nothing was skipped before it, so nothing else
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".txt", ".parquet") or p.name == "stats.json"]


@pytest.mark.parametrize("stage", STAGES)
def test_fail_policy_refuses_a_binary_file(stage, messy, vocab, tmp_path):
    done = run_stage(stage, [messy.root / "a_clean.txt", messy.root / "f_image.png"], tmp_path, vocab,
                     "--on-error", "fail")
    assert done.returncode == 1
    assert error_line(done) == f"{messy.root}/f_image.png: byte 0: PNG image, not text"


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "{root}/absent.txt: no such file or directory"),
        ("empty_dir", "{root}/nothing: directory has no input files (hidden files are ignored)"),
        ("format", "--input-format 'csv': choose from auto, text, bert, jsonl, parquet, wiki"),
    ],
)
def test_usage_errors_exit_2_before_any_output(stage, case, message, messy, vocab, tmp_path):
    inputs = {"missing": [messy.root / "absent.txt"], "empty_dir": [messy.empty_dir]}
    inputs = inputs.get(case, messy.per_document)
    options = ["--input-format", "csv"] if case == "format" else []
    out = tmp_path / "out"
    done = run_stage(stage, inputs, out, vocab, *options)
    assert done.returncode == 2
    assert error_line(done) == message.format(root=messy.root)
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]


def test_pipeline_run_counts_like_the_stages_and_fails_the_same_way(messy, tmp_path):
    run = ["run", REPO / "pipelines" / "demo.toml", "--no-progress", "--workers", "1", "--until", "pairs",
           *("--set", "vocab.vocab_size=1000", "--set", "vocab.cased=true", "--set", "pairs.dupe_factor=1")]
    paths = ", ".join(f"'{p}'" for p in messy.per_document)
    done = corpusprep(*run, "--run-dir", tmp_path / "ok", "--set", f"input.paths=[{paths}]")
    assert done.returncode == 0, done.stderr
    read, used, skipped = counts("build-pairs", tmp_path / "ok" / "pairs")
    assert_counts_add_up(read, used, skipped)
    assert skipped == dict.fromkeys(DOCUMENT_SKIPS, 1)
    assert read["skipped_files"] == {"binary": 1, "empty_file": 1}
    stages = json.loads((tmp_path / "ok" / "report.json").read_text())["stages"]
    for report in (stages[0]["counts"], stages[1]["counts"]):  # vocab and pairs: every document accounted for
        assert report["documents_read"] == read["documents_seen"]
        assert report["documents_read"] == report["documents_used"] + report["documents_skipped"]
        assert report["documents_skipped"] == sum(report["skipped"].values())

    failed = corpusprep(*run, "--run-dir", tmp_path / "bad", "--set", f"input.paths=['{messy.root}']")
    assert failed.returncode == 1
    message = rf"{messy.root}/x_cut\.txt\.gz: byte \d+: truncated or corrupt gz stream: "
    assert re.search(message, error_line(failed))
