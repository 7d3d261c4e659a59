"""build_pairs end to end on small synthetic BERT-format corpora."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from corpusprep.errors import DataError, UsageError
from corpusprep.pair import build as build_module
from corpusprep.pair import tasks as tasks_module
from corpusprep.pair.build import PairOptions, build_pairs, document_partition
from corpusprep.read import ReadOptions
from tests.contexts import quiet
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert

BERT = ReadOptions(format="bert")


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return make_vocab(tmp_path_factory.mktemp("vocab"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    docs = synthetic_documents(300, seed=0)
    docs[10] = docs[10] + [" ".join(["w5"] * 10_000)]  # a 10,000-token sentence
    return write_bert(tmp_path_factory.mktemp("corpus") / "corpus.txt", docs), docs


def files(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.parquet"))}


def run(corpus_path, vocab, out, options=None, overwrite=False):
    options = options or PairOptions(docs_per_partition=64, validation_fraction=0.1, dupe_factor=2)
    return build_pairs([corpus_path], vocab, out, options, BERT, context=quiet(1, overwrite=overwrite))


@pytest.fixture(scope="module")
def built(corpus, vocab, tmp_path_factory):
    out = tmp_path_factory.mktemp("pairs")
    return out, run(corpus[0], vocab, out)


def test_layout_and_stats_add_up(built):
    out, stats = built
    assert json.loads((out / "stats.json").read_text()) == {k: v for k, v in stats.items() if k != "seconds"}
    assert not (out / "_work").exists()
    assert stats["documents"] == 300 == stats["documents_used"] + sum(stats["documents_skipped"].values())
    for split, s in stats["splits"].items():
        assert s["documents"] == s["documents_used"] + sum(s["documents_skipped"].values())
        parts = sorted((out / split).glob("part-*-d*.parquet"))
        assert len(parts) == s["files"] == s["partitions"] * 2
        rows = [pq.read_metadata(p).num_rows for p in parts]
        assert sum(rows) == s["pairs"] == s["is_next"] + s["not_next"]
    assert stats["splits"]["train"]["partitions"] >= 4
    assert 0 < stats["splits"]["validation"]["documents"] < 60


def test_provenance_isnext_follows_notnext_elsewhere_and_truncation(built, corpus, vocab):
    out, stats = built
    tokenizer = Tokenizer.from_file(str(vocab / "tokenizer.json"))
    docs = corpus[1]
    encoded = {}  # doc id -> (token list, start of each sentence)

    def doc_tokens(doc_id):
        if doc_id not in encoded:
            ids = [
                tokenizer.encode(s, add_special_tokens=False).ids[:125]
                for s in docs[int(doc_id.split(":")[1])]
            ]
            encoded[doc_id] = (sum(ids, []), np.cumsum([0] + [len(i) for i in ids]).tolist())
        return encoded[doc_id]

    def locate(segment, doc_id, sentence):
        """Offset of `segment` in its document: at most 125 tokens (front truncation) into `sentence`."""
        tokens, starts = doc_tokens(doc_id)
        for offset in range(starts[sentence], starts[sentence] + 126):
            if tokens[offset : offset + len(segment)] == segment:
                return offset
        raise AssertionError(f"segment not found in {doc_id} sentence {sentence}")

    for split in ("train", "validation"):
        table = pq.read_table(out / split).to_pylist()
        for row in table[::5]:
            a, b = row["tokens_a"], row["tokens_b"]
            assert min(len(a), len(b)) >= 1 and len(a) + len(b) <= 125
            a_at = locate(a, row["doc_id"], row["sentence_index"])
            b_at = locate(b, row["b_doc_id"], row["b_sentence_index"])
            if row["is_random_next"]:
                assert row["b_doc_id"] != row["doc_id"]
            else:
                _, starts = doc_tokens(row["doc_id"])
                assert row["b_doc_id"] == row["doc_id"]
                assert row["b_sentence_index"] > row["sentence_index"]
                # B is the sentences right after A: only tokens truncated from A's back lie between them
                assert a_at + len(a) <= starts[row["b_sentence_index"]] <= b_at
    train = stats["splits"]["train"]
    assert train["sentences_truncated"] + stats["splits"]["validation"]["sentences_truncated"] == 1
    assert train["pairs_truncated"] > 0


def test_split_never_crossed_and_notnext_from_same_partition(built):
    out, stats = built
    options = PairOptions(**stats["options"])
    train, validation = pq.read_table(out / "train"), pq.read_table(out / "validation")
    train_docs = set(train["doc_id"].to_pylist()) | set(train["b_doc_id"].to_pylist())
    validation_docs = set(validation["doc_id"].to_pylist()) | set(validation["b_doc_id"].to_pylist())
    assert train_docs and validation_docs and not train_docs & validation_docs
    partitions = stats["splits"]["train"]["partitions"]
    for path in sorted((out / "train").glob("*.parquet")):
        part = int(path.name.split("-")[1])
        table = pq.read_table(path)
        for doc_id in set(table["doc_id"].to_pylist()) | set(table["b_doc_id"].to_pylist()):
            assert document_partition(options.seed, doc_id, partitions) == part


def test_balance_over_ten_thousand_pairs(vocab, tmp_path):
    docs = synthetic_documents(1000, seed=2, sentences=(1, 10), words=(2, 8))
    path = write_bert(tmp_path / "short.txt", docs)
    options = PairOptions(max_seq_length=32, dupe_factor=5, docs_per_partition=256, validation_fraction=0.0)
    stats = run(path, vocab, tmp_path / "out", options)
    assert stats["pairs"] >= 10_000
    assert abs(stats["not_next"] / stats["pairs"] - 0.5) <= 0.005
    assert stats["splits"]["train"]["max_file_imbalance"] <= 3
    for path in (tmp_path / "out" / "train").glob("*.parquet"):
        label = pq.read_table(path, columns=["is_random_next"])["is_random_next"].to_numpy()
        assert abs(2 * int(label.sum()) - len(label)) <= 3


def test_workers_do_not_change_the_output(corpus, vocab, built, tmp_path):
    out, _ = built
    options = PairOptions(docs_per_partition=64, validation_fraction=0.1, dupe_factor=2)
    build_pairs([corpus[0]], vocab, tmp_path / "two", options, BERT, context=quiet(2))
    assert files(tmp_path / "two") == files(out)


def test_interrupted_run_resumes_to_the_same_bytes(corpus, vocab, built, tmp_path, monkeypatch):
    out, _ = built
    real, calls = build_module.pair_task, []

    def failing(task):
        if len(calls) == 3:
            raise RuntimeError("simulated crash")
        calls.append(task.id)
        return real(task)

    monkeypatch.setattr(build_module, "pair_task", failing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run(corpus[0], vocab, tmp_path / "resumed")
    assert (tmp_path / "resumed" / ".work").is_dir() and not (tmp_path / "resumed" / "stats.json").exists()
    assert len(files(tmp_path / "resumed")) == 3  # finished files only, each complete
    monkeypatch.setattr(build_module, "pair_task", real)
    stats = run(corpus[0], vocab, tmp_path / "resumed")
    assert files(tmp_path / "resumed") == files(out)
    assert stats["pairs"] == built[1]["pairs"]


def test_rerun_is_a_no_op_and_other_options_need_overwrite(corpus, vocab, built, tmp_path):
    out, stats = built
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")}
    written = {k: v for k, v in stats.items() if k != "seconds"}  # the run time is returned, not written
    assert run(corpus[0], vocab, out) == {**written, "nothing_to_do": True}
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")} == before
    other = PairOptions(docs_per_partition=64, validation_fraction=0.1, dupe_factor=1)
    with pytest.raises(UsageError, match="--overwrite"):
        run(corpus[0], vocab, out, other)
    target = tmp_path / "copy"
    run(corpus[0], vocab, target)
    stats1 = run(corpus[0], vocab, target, other, overwrite=True)
    assert stats1["splits"]["train"]["files"] == stats["splits"]["train"]["files"] // 2
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError, match="no corpusprep run wrote"):
        run(corpus[0], vocab, tmp_path / "mine")
    run(corpus[0], vocab, tmp_path / "mine", overwrite=True)  # writes beside the user's file
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert files(tmp_path / "mine") == files(out)


def test_too_small_corpus_is_a_clear_error(vocab, tmp_path):
    path = write_bert(tmp_path / "one.txt", [["w1 w2.", "w3 w4."]])
    with pytest.raises(DataError, match="at least two"):
        run(path, vocab, tmp_path / "out", PairOptions(validation_fraction=0.0))


def test_a_partition_is_loaded_once_for_its_passes_and_again_when_its_caches_change(tmp_path, monkeypatch):
    from corpusprep.pair.instances import PartitionTokens
    from corpusprep.pair.tokens import read_token_batch, token_chunk_writer

    def part(n: int) -> PartitionTokens:
        return PartitionTokens(np.arange(n, dtype=np.uint16), np.array([0, n]), np.zeros(1, np.uint32),
                               np.array([0, 1]), [f"d{n}"])

    def write(first: int) -> None:
        with token_chunk_writer(tmp_path / "c000000.arrow", np.dtype(np.uint16)) as put:
            put("train/00000", part(first))
            put("train/00001", part(7))

    write(5)
    p0, p1 = (("train/00000", ((tmp_path / "c000000.arrow", 0, 1),)),
              ("train/00001", ((tmp_path / "c000000.arrow", 1, 1),)))
    loads = []
    monkeypatch.setattr(tasks_module, "read_token_batch", lambda *a: loads.append(a) or read_token_batch(*a))
    cache = tasks_module.PartitionCache()  # an object, not module state: a fresh one holds nothing
    first = cache.get(*p0, np.dtype(np.uint16))
    assert cache.get(*p0, np.dtype(np.uint16)) is first and len(loads) == 1
    with pytest.raises(ValueError):  # read-only: no pass can change what the next one sees
        first.tokens[0] = 1
    assert cache.get(*p1, np.dtype(np.uint16)).tokens.tolist() == list(range(7))
    write(6)  # rewritten (a repaired run): loaded again
    assert cache.get(*p0, np.dtype(np.uint16)).tokens.tolist() == list(range(6))
    assert len(loads) == 3
