"""build-pairs' work follows the bytes of the corpus, not its count of documents (pair/sizes.py): chunks and
partitions, the work files and their bytes, on many tiny documents; chunks bounded for long ones."""

from __future__ import annotations

import json

import numpy as np
import pytest

from corpusprep.engine import artifact, storage
from corpusprep.pair import sizes
from corpusprep.pair.build import PairOptions, build_pairs
from corpusprep.read import ReadOptions
from tests.contexts import quiet
from tests.pair.helpers import make_vocab

MiB = 2**20


def chunks_of(sizes_: list[int], docs_per_chunk: int = 256) -> list[list[int]]:
    """The chunks the read stage cuts documents of these sizes into."""
    rule, chunks, open_ = sizes.ChunkRule(docs_per_chunk), [], []
    for size in sizes_:
        if rule.before(size):
            chunks.append(open_)
            open_ = []
            rule.ended()
        open_.append(size)
        rule.add(size)
        if rule.after():
            chunks.append(open_)
            open_ = []
            rule.ended()
    return chunks + ([open_] if open_ else [])


def test_chunks_follow_bytes_and_never_pass_the_cap_but_for_one_document():
    rng = np.random.default_rng(0)
    tiny = [13] * 200_000  # 2.6 MB of two-word documents: by count, not 782 chunks of 256
    most = sizes.MAX_CHUNK_DOCS
    assert [len(c) for c in chunks_of(tiny)] == [most] * 3 + [200_000 - 3 * most]
    # documents of every length up to the reader's bound (16 MB): a chunk stays within CHUNK_CHARS unless it
    # is one document alone; and there are at most 2 chunks per MIN_CHUNK_CHARS of text
    mixed = [int(x) for x in np.exp(rng.uniform(0, np.log(16e6), 3_000))]
    chunks = chunks_of(mixed)
    assert [s for c in chunks for s in c] == mixed
    assert all(sum(c) <= sizes.CHUNK_CHARS or len(c) == 1 for c in chunks)
    assert len(chunks) <= 1 + 2 * sum(mixed) / sizes.MIN_CHUNK_CHARS
    # ordinary documents (3 KB): chunks grow with what was read, from 1 MiB up to CHUNK_CHARS
    wiki = [int(x) for x in rng.integers(1_000, 5_000, 60_000)]
    lengths = [sum(c) for c in chunks_of(wiki)]
    assert lengths[0] >= sizes.MIN_CHUNK_CHARS and max(lengths) <= sizes.CHUNK_CHARS
    assert max(lengths) > 4 * MiB and len(lengths) < sum(wiki) / (2 * MiB)


def test_partitions_follow_documents_within_bounds_of_bytes():
    count = sizes.partition_count
    assert count(100_000, 300_000_000, 2048) == 49  # ordinary documents (3 KB): by their count, as always
    assert count(5_000_000, 64_000_000, 2048) == 123  # tiny ones: ~512 KiB of text each, not 2,442
    assert count(3_000, 3_000 * 500_000, 2048) == 12  # books: ~MAX_PARTITION_CHARS each, not 2 of 750 MB
    assert count(63, 1_000_000_000, 2048) == 8  # a 1 GB line's 16 MB parts: ~125 MB a partition
    assert count(14, 200_000_000, 2048) == 2 and count(7, 100_000_000, 2048) == 1  # 4 documents at least
    assert count(10, 300, 2048) == count(0, 0, 2048) == 1


def test_tiny_documents_keep_few_work_files_and_bytes(tmp_path, monkeypatch):
    """12,000 one- and two-word documents (95 KB): 1 chunk and 1 partition; before, 47 chunks of 256
    documents each wrote a cache file per partition touched (6 partitions): 431 work files."""
    vocab = make_vocab(tmp_path / "vocab")
    rng = np.random.default_rng(1)
    words = rng.integers(0, 300, (12_000, 2))
    text = "".join(f"w{a} w{b}\n\n" if a % 2 else f"w{a}\n\n" for a, b in words)
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(text)
    seen: list[tuple[int, int]] = []
    remove_tree = storage.remove_tree

    def measured(path):  # the work directory as the commit finds it: everything every phase left
        if str(path).endswith(".work"):
            files = [p for p in path.rglob("*") if p.is_file()]
            seen.append((len(files), sum(p.stat().st_size for p in files)))
        remove_tree(path)

    monkeypatch.setattr(artifact.storage, "remove_tree", measured)
    options = PairOptions(dupe_factor=1)
    stats = build_pairs([corpus], vocab, tmp_path / "pairs", options, ReadOptions(format="text"),
                        context=quiet(1))
    assert stats["documents"] == 12_000 and stats["splits"]["train"]["partitions"] == 1
    (files, size), mb = seen[-1], len(text) / MiB
    assert files <= 8 + 16 * mb, files  # the bound of docs/manual/pairs.md at the default options
    assert size <= 64 * 1024 + 3 * len(text), size


def test_a_read_record_without_the_characters_of_its_splits_is_one_line(tmp_path, monkeypatch):
    """The read task's record steers the partitions: one without `split_chars` (an unfinished build of an
    earlier version, or an edited marker) is one line, not partitions guessed from the documents alone."""
    from corpusprep.errors import DataError
    from corpusprep.pair import build as build_module

    vocab = make_vocab(tmp_path / "vocab")
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"w{i} w{i + 1}. w{i + 2} w{i + 3}.\n\n" for i in range(200)))
    monkeypatch.setattr(build_module, "pair_task", lambda task: 1 / 0)  # stop after the tokenize phase
    options, text = PairOptions(dupe_factor=1), ReadOptions(format="text")
    with pytest.raises(ZeroDivisionError):
        build_pairs([corpus], vocab, tmp_path / "pairs", options, text, context=quiet(1))
    marker = tmp_path / "pairs" / ".work" / "markers" / "read.done.json"
    record = json.loads(marker.read_text())
    del record["stats"]["split_chars"]
    marker.write_text(json.dumps(record))
    monkeypatch.undo()
    with pytest.raises(DataError, match=r"markers: the read task's record: split_chars: missing .*overwrite"):
        build_pairs([corpus], vocab, tmp_path / "pairs", options, text, context=quiet(1))
