"""`corpusprep vocab`: layout of the trained vocab, interop with transformers, reruns, bad input."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from corpusprep.errors import DataError, InputError, UsageError
from corpusprep.read import ReadOptions
from corpusprep.tokenize import SPECIAL_TOKENS, VocabInfo
from corpusprep.tokenize.vocab import (
    VocabOptions,
    leading_tokens,
    measure,
    train_tokenizer,
    train_vocab,
    vocab_from_file,
)
from tests.contexts import quiet
from tests.tokenize.conftest import hf_bert_tokenizer
from tests.tokenize.texts import corpus_sentences, head_lines, mixed_sentences


def tokens_of(vocab_dir: Path) -> list[str]:
    return (vocab_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()


# layout -------------------------------------------------------------------------------------------------


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_specials_and_reserved_slots_in_googles_order(trained_vocab):
    tokens = tokens_of(trained_vocab)
    assert tokens[:15] == ["[PAD]", *(f"[unused{i}]" for i in range(10)), "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    info = VocabInfo.load(trained_vocab)
    assert (info.pad_id, info.unk_id, info.cls_id, info.sep_id, info.mask_id) == (0, 11, 12, 13, 14)
    assert info.is_special[:15].all() and not info.is_special[15:].any()
    assert len(tokens) == len(set(tokens))
    # the reserved slots appear nowhere else, and never as added tokens that would match raw text
    assert sum(t.startswith("[unused") for t in tokens) == 10
    added = Tokenizer.from_file(str(trained_vocab / "tokenizer.json")).get_added_tokens_decoder().values()
    assert {t.content for t in added} == set(SPECIAL_TOKENS)


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_vocab_size_counts_every_line(trained_vocab):
    report = json.loads((trained_vocab / "vocab_report.json").read_text())
    assert len(tokens_of(trained_vocab)) == report["vocab_size"] == 4000  # 1.5 MB easily fills 4,000 tokens
    assert report["reserved"] == 10
    assert report["sha256"] == hashlib.sha256((trained_vocab / "vocab.txt").read_bytes()).hexdigest()
    assert report["special_ids"] == {"[PAD]": 0, "[UNK]": 11, "[CLS]": 12, "[SEP]": 13, "[MASK]": 14}


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_uncased_vocab_has_no_uppercase_or_accents(trained_vocab, cased_vocab):
    uncased, cased = tokens_of(trained_vocab)[15:], tokens_of(cased_vocab)[5:]
    assert all(t == t.lower() for t in uncased)
    assert not any(c in t for t in uncased for c in "éèüöàç")
    assert sum(t != t.lower() for t in cased) > 200  # Python docs: class names, sentence starts, acronyms
    up, low = Tokenizer.from_file(str(cased_vocab / "tokenizer.json")), Tokenizer.from_file(
        str(trained_vocab / "tokenizer.json")
    )
    assert up.encode("The File").tokens != up.encode("the file").tokens
    assert low.encode("The Fîle").tokens == low.encode("the file").tokens


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_tokenizer_json_has_bert_template_and_decoder(trained_vocab):
    tokenizer = Tokenizer.from_file(str(trained_vocab / "tokenizer.json"))
    info = VocabInfo.load(trained_vocab)
    pair = tokenizer.encode("Return the value.", "It is cached.")
    assert pair.ids[0] == info.cls_id and pair.ids.count(info.sep_id) == 2 and pair.ids[-1] == info.sep_id
    first_sep = pair.ids.index(info.sep_id)
    assert pair.type_ids == [0] * (first_sep + 1) + [1] * (len(pair.ids) - first_sep - 1)
    assert tokenizer.decode(tokenizer.encode("the value is cached").ids) == "the value is cached"
    assert tokenizer.encode("a [MASK] b").ids[2] == info.mask_id


TRAIN_TWICE = """
import sys
from corpusprep.tokenize.vocab import VocabOptions, build_vocab
corpus, out = sys.argv[1:]
build_vocab([corpus], out + "/uncased", VocabOptions(vocab_size=4000, reserved=10))
build_vocab([corpus], out + "/cased", VocabOptions(vocab_size=3000, cased=True, limit_alphabet=60))
"""


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_training_gives_the_same_bytes_in_every_process(demo_jsonl, trained_vocab, tmp_path):
    """The upstream trainer alone numbers "##x" pieces in hash-map order, so equally frequent merges come out
    in another order (or another set) from one process to the next (huggingface/tokenizers#1794); with the
    alphabet fixed first, separate processes agree byte for byte."""
    for run in ("a", "b"):
        done = subprocess.run([sys.executable, "-c", TRAIN_TWICE, str(demo_jsonl), str(tmp_path / run)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    for name in ("uncased", "cased"):
        a, b = (tmp_path / run / name / "vocab.txt" for run in ("a", "b"))
        assert a.read_bytes() == b.read_bytes(), name
    in_process = (trained_vocab / "vocab.txt").read_bytes()  # the session fixture: same options
    assert (tmp_path / "a" / "uncased" / "vocab.txt").read_bytes() == in_process
    cased = tokens_of(tmp_path / "a" / "cased")
    assert len(cased) == 3000 and sum(len(t) == 1 for t in cased) == 60  # limit_alphabet, ties broken too
    # Google's order: specials, the characters, their "##" forms, then the merged pieces
    singles = [i for i, t in enumerate(cased) if len(t) == 1]
    continuing = [i for i, t in enumerate(cased) if len(t) == 3 and t.startswith("##")]
    assert singles == list(range(5, 65))
    assert continuing == list(range(65, 65 + len(continuing))) and len(continuing) > 30
    assert all(t[2:] in {cased[i] for i in singles} for t in (cased[i] for i in continuing))


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_larger_vocab_needs_fewer_pieces_per_word(demo_jsonl):
    text = head_lines(demo_jsonl, 800)
    small = train_tokenizer(text, VocabOptions(vocab_size=600))
    large = train_tokenizer(text, VocabOptions(vocab_size=6000))
    sample = corpus_sentences(demo_jsonl, 3000)
    small_stats, large_stats = measure(small, sample), measure(large, sample)
    assert small_stats["words"] == large_stats["words"] > 20_000  # same pre-tokenization
    assert small_stats["pieces_per_word"] > large_stats["pieces_per_word"] * 1.3
    assert large_stats["unk_rate"] < 0.01


# interop with transformers -------------------------------------------------------------------------------


def assert_same_ids(vocab_dir: Path, sentences: list[str], lowercase: bool = True) -> None:
    ours = Tokenizer.from_file(str(vocab_dir / "tokenizer.json"))
    theirs = hf_bert_tokenizer(vocab_dir / "vocab.txt", lowercase=lowercase)
    our_ids = [e.ids for e in ours.encode_batch(sentences)]
    assert our_ids == theirs(sentences)["input_ids"]
    pairs = list(zip(sentences[::2], sentences[1::2], strict=True))
    our_pairs = ours.encode_batch(pairs)
    their_pairs = theirs([a for a, _ in pairs], [b for _, b in pairs])
    assert [e.ids for e in our_pairs] == their_pairs["input_ids"]
    assert [e.type_ids for e in our_pairs] == their_pairs["token_type_ids"]


@pytest.fixture(scope="module")
def hard_sentences(demo_jsonl) -> list[str]:
    sentences = corpus_sentences(demo_jsonl, 3000) + mixed_sentences(3000)
    assert len(sentences) == 6000
    return sentences


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_ids_agree_with_bert_tokenizer_fast_trained(trained_vocab, hard_sentences):
    assert_same_ids(trained_vocab, hard_sentences)


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_ids_agree_with_bert_tokenizer_fast_cased(cased_vocab, hard_sentences):
    assert_same_ids(cased_vocab, hard_sentences, lowercase=False)


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
@pytest.mark.parametrize("cased", [False, True])
def test_auto_tokenizer_loads_the_directory_as_bert(trained_vocab, cased_vocab, hard_sentences, cased):
    transformers = pytest.importorskip("transformers")
    vocab_dir = cased_vocab if cased else trained_vocab
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(vocab_dir))
    assert type(tokenizer).__name__ in ("BertTokenizer", "BertTokenizerFast")
    assert tokenizer.do_lower_case is (not cased)
    assert (tokenizer.cls_token, tokenizer.mask_token, tokenizer.pad_token) == ("[CLS]", "[MASK]", "[PAD]")
    ours = Tokenizer.from_file(str(vocab_dir / "tokenizer.json"))
    sentences = hard_sentences[:1500] + hard_sentences[-1500:]
    assert tokenizer(sentences)["input_ids"] == [e.ids for e in ours.encode_batch(sentences)]
    pair = tokenizer("The File is read.", "Then it is closed.")
    assert pair["input_ids"] == ours.encode("The File is read.", "Then it is closed.").ids
    assert any(t != t.lower() for t in tokenizer.tokenize("The File")) is cased


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_from_vocab_google(bert_vocab_txt, tmp_path, hard_sentences):
    out = tmp_path / "google"
    report = vocab_from_file(bert_vocab_txt, out)
    assert (out / "vocab.txt").read_bytes() == bert_vocab_txt.read_bytes()
    info = VocabInfo.load(out)
    ids = (info.pad_id, info.unk_id, info.cls_id, info.sep_id, info.mask_id)
    assert info.size == 30522 and ids == (0, 100, 101, 102, 103)
    assert report["vocab_size"] == 30522 and report["reserved"] == 994
    assert report["seconds"]["train"] is None and report["sample"] is None
    assert report["documents"]["read"] == 0
    assert_same_ids(out, hard_sentences)
    assert Tokenizer.from_file(str(out / "tokenizer.json")).encode("hello world").tokens == [
        "[CLS]", "hello", "world", "[SEP]"
    ]


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_from_vocab_measures_coverage_on_inputs(bert_vocab_txt, demo_jsonl, tmp_path):
    report = vocab_from_file(bert_vocab_txt, tmp_path / "google", inputs=[demo_jsonl])
    sample = report["sample"]
    assert sample["documents"] == 256 and sample["words"] > 10_000
    # Google's vocab on English prose: almost no [UNK], a bit more than one piece a word
    assert sample["unk_rate"] < 0.005
    assert 1.02 < sample["pieces_per_word"] < 1.6


# reruns --------------------------------------------------------------------------------------------------


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_rerun_reuses_and_different_options_refuse(demo_jsonl, tmp_path):
    small = tmp_path / "small.jsonl"
    small.write_text("".join(head_lines(demo_jsonl, 300)), encoding="utf-8")
    out = tmp_path / "vocab"
    first = train_vocab([small], out, VocabOptions(vocab_size=1000))
    assert not first["reused"]
    mtime = (out / "vocab.txt").stat().st_mtime_ns
    second = train_vocab([small], out, VocabOptions(vocab_size=1000))
    assert second["reused"] and second["sha256"] == first["sha256"]
    assert (out / "vocab.txt").stat().st_mtime_ns == mtime
    with pytest.raises(UsageError, match="--overwrite"):
        train_vocab([small], out, VocabOptions(vocab_size=900))
    third = train_vocab([small], out, VocabOptions(vocab_size=900), context=quiet(overwrite=True))
    assert len(tokens_of(out)) == third["vocab_size"] == 900
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]
    with open(small, "a", encoding="utf-8") as f:  # an edited corpus is not "the same run"
        f.write('{"text": "one more document"}\n')
    with pytest.raises(UsageError, match="--overwrite"):
        train_vocab([small], out, VocabOptions(vocab_size=900))


def test_a_vocab_edited_in_place_is_rebuilt_by_a_rerun(bert_vocab_txt, tmp_path):
    """Same size, other bytes: build-pairs and shard refuse it by sha256, so the rerun must not call it up
    to date (it compares sizes only for the big outputs of other kinds)."""
    out = tmp_path / "vocab"
    vocab_from_file(bert_vocab_txt, out)
    original = {name: (out / name).read_bytes() for name in ("vocab.txt", "tokenizer.json")}
    for name in original:
        edited = bytearray(original[name])
        at = edited.index(b"hello")
        edited[at : at + 5] = b"jello"
        (out / name).write_bytes(edited)
        with pytest.raises(DataError):
            VocabInfo.verified(out)
        report = vocab_from_file(bert_vocab_txt, out)
        assert not report.get("reused") and (out / name).read_bytes() == original[name]
        assert VocabInfo.verified(out).sha256 == hashlib.sha256(original["vocab.txt"]).hexdigest()
    assert vocab_from_file(bert_vocab_txt, out)["reused"]  # intact: up to date


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_refuses_a_foreign_vocab_without_overwrite(bert_vocab_txt, demo_jsonl, tmp_path):
    out = tmp_path / "someone_elses"
    out.mkdir()
    (out / "vocab.txt").write_bytes(bert_vocab_txt.read_bytes())
    with pytest.raises(UsageError, match="no corpusprep manifest owns it"):
        train_vocab([demo_jsonl], out, VocabOptions(vocab_size=1000))
    with pytest.raises(UsageError, match="no corpusprep manifest owns it"):  # --overwrite never replaces it
        train_vocab([demo_jsonl], out, VocabOptions(vocab_size=1000), context=quiet(overwrite=True))
    assert (out / "vocab.txt").read_bytes() == bert_vocab_txt.read_bytes()


# counts and bad input ------------------------------------------------------------------------------------


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_counts_add_up_with_skipped_documents(demo_jsonl, tmp_path):
    lines = head_lines(demo_jsonl, 200)
    bad = lines[:100] + ["{not json\n", '{"id": "x", "text": ""}\n', '{"id": "y"}\n'] + lines[100:]
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text("".join(bad), encoding="utf-8")
    report = train_vocab([corpus], tmp_path / "vocab", VocabOptions(vocab_size=800))
    docs = report["documents"]
    assert docs["used"] == 200 and docs["read"] == 203
    assert docs["read"] == docs["used"] + sum(docs["skipped"].values())
    assert report["characters"] == sum(len(json.loads(line)["text"]) for line in lines)


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_bad_document_under_fail_names_file_and_line(demo_jsonl, tmp_path):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text("".join(head_lines(demo_jsonl, 50)) + "{oops\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.jsonl:51"):
        train_vocab([corpus], tmp_path / "vocab", VocabOptions(vocab_size=800), ReadOptions(on_error="fail"))
    assert not (tmp_path / "vocab" / "vocab_report.json").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(vocab_size=50), r"--vocab-size \(vocab_size\) 50: must be an integer from 105 to"),
        (dict(vocab_size=150, reserved=100), r"--vocab-size \(vocab_size\) 150: must be an integer from 205"),
        (dict(reserved=-1), r"--reserved \(reserved\) -1: must be an integer from 0"),
        (dict(min_frequency=0), r"--min-frequency \(min_frequency\) 0: must be an integer from 1"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(UsageError, match=message):
        VocabOptions(**options)


def test_vocab_size_below_the_alphabet_is_refused(tmp_path):
    corpus = tmp_path / "wide.txt"
    corpus.write_text("".join(chr(0x4E00 + i) + "abc\n\n" for i in range(400)), encoding="utf-8")
    with pytest.raises(UsageError, match="too small for this corpus's alphabet"):
        train_vocab([corpus], tmp_path / "vocab", VocabOptions(vocab_size=200, min_frequency=1))


def test_missing_input_leaves_no_output(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        train_vocab([tmp_path / "nope.txt"], tmp_path / "vocab")
    assert not (tmp_path / "vocab").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n", "lacks the special tokens \\[MASK\\]"),
        ("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nhello\n", "vocab.txt:7: token 'hello' repeats line 6"),
        ("[PAD]\n[UNK]\n\n[CLS]\n[SEP]\n[MASK]\n", "vocab.txt:3: empty token"),
    ],
)
def test_bad_from_vocab_file(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        vocab_from_file(path, tmp_path / "out")


def test_leading_tokens():
    assert leading_tokens(0) == list(SPECIAL_TOKENS)
    assert leading_tokens(2) == ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


# command line --------------------------------------------------------------------------------------------


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "corpusprep", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True)


@pytest.mark.slow  # session fixture: 1.5 MB demo corpus + two vocabs (~9 s)
def test_cli_trains_then_reuses(demo_jsonl, tmp_path):
    small = tmp_path / "small.jsonl"
    small.write_text("".join(head_lines(demo_jsonl, 300)), encoding="utf-8")
    args = ("vocab", str(small), "-o", "v", "--vocab-size", "1200", "--reserved", "3")
    first = cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "1,200 tokens from 300 documents" in first.stderr
    assert tokens_of(tmp_path / "v")[:5] == ["[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]"]
    second = cli(*args, cwd=tmp_path)
    assert second.returncode == 0 and "up to date" in second.stderr
    other = cli(*args[:-1], "4", cwd=tmp_path)
    assert other.returncode == 2 and "--overwrite" in other.stderr


def test_cli_errors_are_one_line(tmp_path):
    result = cli("vocab", "missing.txt", "-o", "v", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["corpusprep: error: missing.txt: no such file or directory"]
    assert not (tmp_path / "v").exists()
    result = cli("vocab", "-o", "v", cwd=tmp_path)
    assert result.returncode == 2 and "--from-vocab" in result.stderr and "Traceback" not in result.stderr


def test_cli_help_explains_every_option(tmp_path):
    result = cli("vocab", "--help", cwd=tmp_path)
    assert result.returncode == 0
    for option in ("--output", "--vocab-size", "--min-frequency", "--limit-alphabet", "--reserved", "--cased",
                   "--from-vocab", "--input-format", "--text-field", "--on-error", "--overwrite"):
        assert option in result.stdout
    assert "[unused0..N-1]" in result.stdout
