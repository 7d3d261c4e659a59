"""The objectives of build-pairs on real text: SOP pairs (ALBERT) and `none`'s rows of pieces (RoBERTa).

Text: 2 MB of the embedded demo corpus (docstrings, ~3,000 documents), a WordPiece vocab trained on it. Every
row is checked against the documents as tokenized here, independently of the pair stage: segments and
pieces must be the documents' own token runs, in the stated place and order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from corpusprep.demo_corpus import iter_demo_documents
from corpusprep.errors import DataError, UsageError
from corpusprep.pair.build import ONE_SENTENCE, PairOptions, build_pairs
from corpusprep.pair.tokens import encode_documents
from corpusprep.read import ReadOptions, iter_documents
from corpusprep.split import make_splitter
from corpusprep.tokenize.vocab import VocabOptions, train_vocab
from tests.contexts import quiet

REPO = Path(__file__).resolve().parents[2]
MAX_LEN = 128
DUPES = 2


def write_jsonl(path: Path, documents) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for doc_id, text in documents:
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """(text path, vocab dir): 2 MB of the demo corpus and a 2,000-token vocab trained on it."""
    root = tmp_path_factory.mktemp("demo")
    text = write_jsonl(root / "demo.jsonl", iter_demo_documents(2.0))
    train_vocab([text], root / "vocab", VocabOptions(vocab_size=2000))
    return text, root / "vocab"


def build(demo, out: Path, objective: str, pack: bool | None = None, workers: int = 1, **options):
    text, vocab = demo
    opts = PairOptions(objective=objective, pack=pack, max_seq_length=MAX_LEN, dupe_factor=DUPES, seed=3,
                       docs_per_partition=1000, **options)
    return build_pairs([text], vocab, out, opts, ReadOptions(), context=quiet(workers))


class Documents:
    """The documents as the pair stage sees them, tokenized here: per id, the tokens and where each (original)
    sentence starts and ends."""

    def __init__(self, demo, max_tokens: int) -> None:
        text, vocab = demo
        tokenizer = Tokenizer.from_file(str(vocab / "tokenizer.json"))
        docs = list(iter_documents([text], ReadOptions()))
        splitter = make_splitter("default", "en", "auto")
        part, self.counts = encode_documents(
            tokenizer, [splitter(d.text) for d in docs], [d.id for d in docs],
            sep_id=tokenizer.token_to_id("[SEP]"), max_tokens=max_tokens, dtype=np.dtype(np.uint16),
        )
        self.tokens, self.bounds = {}, {}
        off, index = part.sent_offsets.tolist(), part.sent_index.tolist()
        for d, doc_id in enumerate(part.doc_ids):
            s0, s1 = int(part.doc_offsets[d]), int(part.doc_offsets[d + 1])
            base = off[s0]
            self.tokens[doc_id] = part.tokens[base : off[s1]]
            # original sentence index -> (start, end) in the document's tokens
            self.bounds[doc_id] = {index[s]: (off[s] - base, off[s + 1] - base) for s in range(s0, s1)}

    def sentences(self, doc_id: str) -> int:
        return len(self.bounds[doc_id])

    def ends(self, doc_id: str) -> dict[int, int]:
        """Token offset of each sentence end -> the sentence's index."""
        return {end: i for i, (_, end) in self.bounds[doc_id].items()}


def parquet_files(out: Path, split: str = "train") -> list[Path]:
    return sorted((out / split).glob("part-*.parquet"))


def documents_add_up(stats: dict) -> None:
    for scope in (stats, *stats["splits"].values()):
        assert scope["documents"] == scope["documents_used"] + sum(scope["documents_skipped"].values())


# ------------------------------------------------------------------------------------------------- SOP


@pytest.fixture(scope="module")
def sop(demo, tmp_path_factory):
    out = tmp_path_factory.mktemp("sop")
    return out, build(demo, out, "sop")


@pytest.fixture(scope="module")
def docs3(demo):
    return Documents(demo, MAX_LEN - 3)


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
def test_sop_swaps_exactly_half_and_documents_add_up(sop, docs3):
    out, stats = sop
    assert stats["objective"] == "sop" and stats["pairs"] == stats["swapped"] + stats["not_swapped"] > 10_000
    assert abs(stats["swapped"] / stats["pairs"] - 0.5) <= 0.005
    documents_add_up(stats)
    one_sentence = sum(docs3.sentences(i) == 1 for i in docs3.tokens)
    assert stats["documents_skipped"][ONE_SENTENCE] == one_sentence > 0
    for split in ("train", "validation"):
        files = parquet_files(out, split)
        assert len(files) == stats["splits"][split]["files"] > 0
        for path in files:
            swapped = pq.read_table(path, columns=["is_swapped"])["is_swapped"].to_numpy()
            assert abs(2 * int(swapped.sum()) - len(swapped)) <= 1, path.name


def find(haystack: np.ndarray, needle: np.ndarray, lo: int, hi: int) -> int | None:
    """First position p in [lo, hi] with haystack[p:p + len(needle)] == needle."""
    for p in np.flatnonzero(haystack[lo : hi + 1] == needle[0]) + lo:
        if np.array_equal(haystack[p : p + len(needle)], needle):
            return int(p)
    return None


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
def test_sop_a_and_b_are_adjacent_segments_of_one_document_in_the_labelled_order(sop, docs3):
    out, _ = sop
    checked = truncated = 0
    for path in parquet_files(out):
        for row in pq.read_table(path).to_pylist():
            assert row["doc_id"] == row["b_doc_id"]
            assert row["is_swapped"] == (row["b_sentence_index"] < row["sentence_index"])
            doc = docs3.tokens[row["doc_id"]]
            bounds = docs3.bounds[row["doc_id"]]
            # In text order: `first` starts in sentence i, `second` in sentence j > i.
            first, second = np.array(row["tokens_a"]), np.array(row["tokens_b"])
            i, j = row["sentence_index"], row["b_sentence_index"]
            if row["is_swapped"]:
                first, second, i, j = second, first, j, i
            assert len(first) and len(second) and len(first) + len(second) <= MAX_LEN - 3
            boundary = bounds[j][0]  # where the second segment's text begins
            p1 = find(doc, first, bounds[i][0], boundary - len(first))
            p2 = find(doc, second, boundary, len(doc) - len(second))
            assert p1 is not None and p2 is not None, (path.name, row["doc_id"], i, j)
            ends = docs3.ends(row["doc_id"])
            if len(first) + len(second) < MAX_LEN - 3:  # untruncated: whole sentences, back to back
                assert p1 == bounds[i][0] and p1 + len(first) == boundary == p2
                assert p2 + len(second) in ends
            else:  # truncation only trimmed the ends: what is left stays in place around the boundary
                truncated += 1
                assert p1 + len(first) <= boundary <= p2
            checked += 1
    assert checked > 10_000 and truncated > 0


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
def test_sop_one_document_corpus_works_and_nsp_refuses_it(demo, tmp_path):
    _, vocab = demo
    text = write_jsonl(tmp_path / "one.jsonl", [("only", "The first sentence is here. A second one follows. "
                                                         "Then a third. And a fourth one ends it.")])
    for objective in ("sop", "none"):
        stats = build_pairs([text], vocab, tmp_path / objective, PairOptions(objective=objective,
                            validation_fraction=0.0, dupe_factor=2), ReadOptions(), context=quiet(1))
        assert stats["documents_used"] == 1 and stats["pairs"] >= 2, objective
    with pytest.raises(DataError, match="at least two"):
        build_pairs([text], vocab, tmp_path / "nsp", PairOptions(validation_fraction=0.0), ReadOptions(),
                    context=quiet(1))
    one = write_jsonl(tmp_path / "single.jsonl", [("only", "Just one sentence here.")])
    with pytest.raises(DataError, match="two sentences"):
        build_pairs([one], vocab, tmp_path / "sop1", PairOptions(objective="sop", validation_fraction=0.0),
                    ReadOptions(), context=quiet(1))


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
def test_one_document_per_partition_is_allowed_where_no_other_document_is_drawn(demo, tmp_path):
    _, vocab = demo
    few = write_jsonl(tmp_path / "few.jsonl", list(iter_demo_documents(0.05)))
    for objective in ("sop", "none"):
        options = PairOptions(objective=objective, docs_per_partition=1, dupe_factor=1, validation_fraction=0)
        stats = build_pairs([few], vocab, tmp_path / objective, options, ReadOptions(), context=quiet())
        documents_add_up(stats)
        assert stats["documents_used"] >= 5 and len(parquet_files(tmp_path / objective)) >= 5, objective
    with pytest.raises(UsageError, match=r"\(docs_per_partition\) 1: must be an integer from 2"):
        PairOptions(docs_per_partition=1)


# ------------------------------------------------------------------------------------------------- none


@pytest.fixture(scope="module", params=[True, False], ids=["pack", "no-pack"])
def none(request, demo, tmp_path_factory):
    out = tmp_path_factory.mktemp("none")
    return request.param, out, build(demo, out, "none", pack=request.param)


@pytest.fixture(scope="module")
def docs2(demo):
    return Documents(demo, MAX_LEN - 2)


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
def test_none_pieces_are_whole_sentences_of_one_document_each_once_per_pass(none, docs2):
    pack, out, stats = none
    assert stats["objective"] == "none" and stats["options"]["pack"] is pack
    documents_add_up(stats)
    filled = capacity = 0
    for split in ("train", "validation"):
        for d in range(DUPES):
            seen = Counter()
            for path in parquet_files(out, split):
                if not path.stem.endswith(f"-d{d}"):
                    continue
                previous = None  # unpacked pass 0: a row ends where the next sentence would not fit
                for row in pq.read_table(path).to_pylist():
                    lengths = row["piece_lengths"]
                    if not pack and d == 0:
                        doc_id, first = row["piece_doc_ids"][0], row["piece_sentence_index"][0]
                        if previous is not None and previous[0] == doc_id:
                            start, end = docs2.bounds[doc_id][first]
                            assert previous[1] + end - start > MAX_LEN
                        previous = (doc_id, sum(lengths) + 2)
                    assert len(row["tokens"]) == sum(lengths) and min(lengths) >= 1
                    assert sum(lengths) + 2 * len(lengths) <= MAX_LEN
                    assert len(lengths) == 1 or pack
                    filled += sum(lengths) + 2 * len(lengths)
                    capacity += MAX_LEN
                    at = np.cumsum([0, *lengths])
                    for k, (doc_id, first) in enumerate(zip(row["piece_doc_ids"], row["piece_sentence_index"],
                                                            strict=True)):
                        piece = np.array(row["tokens"][at[k] : at[k + 1]])
                        start = docs2.bounds[doc_id][first][0]
                        assert np.array_equal(docs2.tokens[doc_id][start : start + len(piece)], piece)
                        ends = docs2.ends(doc_id)
                        assert start + len(piece) in ends  # ends at a sentence end
                        last = ends[start + len(piece)]
                        seen.update((doc_id, s) for s in docs2.bounds[doc_id] if first <= s <= last)
            docs = {doc_id for doc_id, _ in seen}
            assert len(docs) == stats["splits"][split]["documents_used"]
            assert set(seen.values()) == {1}  # no sentence twice in a pass
            assert len(seen) == sum(docs2.sentences(i) for i in docs)  # and none missing
    assert round(filled / capacity, 4) == stats["fill"]
    if pack:
        assert stats["fill"] >= 0.90 and stats["pieces"] > stats["rows"]
    else:
        assert stats["pieces"] == stats["rows"]


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
def test_none_cuts_long_sentences_to_max_seq_length_minus_two(none, docs2):
    _, _, stats = none
    truncated = sum(split["sentence_tokens_truncated"] for split in stats["splits"].values())
    assert truncated == docs2.counts["sentence_tokens_truncated"] > 0  # [CLS] s [SEP] fits a row


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
def test_every_pass_gives_other_rows(sop, none):
    for out in (sop[0], none[1]):
        for d0 in parquet_files(out):
            if d0.stem.endswith("-d0"):
                other = d0.with_name(d0.name.replace("-d0.", "-d1."))
                assert not pq.read_table(d0).equals(pq.read_table(other)), d0


# ------------------------------------------------------------------------------------------ every objective


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
@pytest.mark.parametrize("objective,pack", [("sop", None), ("none", True), ("none", False)])
def test_workers_do_not_change_the_output(demo, tmp_path, objective, pack):
    text, vocab = demo
    small = write_jsonl(tmp_path / "small.jsonl", iter_demo_documents(0.3))
    opts = PairOptions(objective=objective, pack=pack, dupe_factor=2, docs_per_partition=100, seed=5)
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        build_pairs([small], vocab, out, opts, ReadOptions(), context=quiet(workers))
        outputs.append({p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.parquet")})
    assert len(outputs[0]) >= 8 and outputs[0] == outputs[1]


def test_options_resolve_pack_and_case():
    assert PairOptions(objective="NONE").pack is True and PairOptions(objective="none").objective == "none"
    # short_seq_prob does not apply to rows of pieces: another value is the same options, so a rerun with it
    # finds the output complete instead of refusing it
    assert PairOptions(objective="none", short_seq_prob=0.7) == PairOptions(objective="none")
    assert PairOptions(objective="sop", short_seq_prob=0.7) != PairOptions(objective="sop")
    assert PairOptions(objective="none", pack=False).pack is False
    assert PairOptions().pack is False and PairOptions(objective="sop", pack=False).pack is False


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
@pytest.mark.parametrize(
    "args,message",
    [
        (["--objective", "mlm"], "choose one of nsp, sop, none"),
        (["--pack"], "--pack applies to --objective none only"),
        (["--objective", "sop", "--pack"], "--pack applies to --objective none only"),
    ],
)
def test_bad_objective_options_are_one_line_usage_errors(demo, tmp_path, args, message):
    text, vocab = demo
    command = [sys.executable, "-m", "corpusprep", "build-pairs", str(text), "--vocab", str(vocab),
               "-o", str(tmp_path / "out"), "--no-progress", *args]
    env = os.environ | {"PYTHONPATH": str(REPO), "COLUMNS": "200"}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # module fixture: 2 MB demo corpus + vocab (~11 s)
@pytest.mark.parametrize("objective,summary", [("sop", "SOP pairs ("), ("None", "pieces, ")])
def test_cli_builds_each_objective_and_says_what_it_built(demo, tmp_path, objective, summary):
    text, vocab = demo
    small = write_jsonl(tmp_path / "small.jsonl", iter_demo_documents(0.1))
    command = [sys.executable, "-m", "corpusprep", "build-pairs", str(small), "--vocab", str(vocab),
               "-o", str(tmp_path / "out"), "--no-progress", "--dupe-factor", "1", "--objective", objective]
    env = os.environ | {"PYTHONPATH": str(REPO), "COLUMNS": "200"}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert summary in result.stderr
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["objective"] == stats["options"]["objective"] == objective.lower()


def test_an_nsp_split_far_from_even_is_announced():
    """One-sentence documents can only give NotNext pairs: 40 of 40 NotNext is said, 50.5% is not."""
    from corpusprep.pair.build import imbalance_warning

    assert "100.0% of 40 pairs are NotNext" in imbalance_warning({"pairs": 40, "not_next": 40}, "p")
    assert imbalance_warning({"pairs": 1000, "not_next": 505}, "p") is None
    assert imbalance_warning({"objective": "sop", "pairs": 40, "swapped": 40}, "p") is None
