"""Long documents: chunks bounded by bytes without changing the pairs; memory bounded per byte of text."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from corpusprep.pair import sizes
from corpusprep.pair.build import PairOptions, build_pairs
from corpusprep.read import ReadOptions
from tests.contexts import quiet
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert


def parquet_bytes(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.parquet"))}


@pytest.mark.slow  # ~1.0 s idle
def test_chunk_boundaries_do_not_change_the_pairs(tmp_path, monkeypatch):
    vocab = make_vocab(tmp_path / "vocab")
    corpus = write_bert(tmp_path / "corpus.txt", synthetic_documents(120, seed=3))
    base = dict(docs_per_partition=32, validation_fraction=0.1, dupe_factor=2)
    runs = {}
    cases = [("docs", 256, 2**20, 2**25), ("small", 7, 0, 2**25), ("bytes", 256, 0, 2000)]
    for name, docs_per_chunk, least, most in cases:
        monkeypatch.setattr(sizes, "MIN_CHUNK_CHARS", least)
        monkeypatch.setattr(sizes, "CHUNK_CHARS", most)
        out = tmp_path / name
        options = PairOptions(**base, docs_per_chunk=docs_per_chunk)
        build_pairs([corpus], vocab, out, options, ReadOptions(format="bert"), context=quiet(1))
        runs[name] = parquet_bytes(out)
    assert runs["docs"] and runs["docs"] == runs["small"] == runs["bytes"]


MEASURE = """
import json, resource, sys
from pathlib import Path
from corpusprep.pair.build import PairOptions, build_pairs
from corpusprep.engine.executor import LocalExecutor
from corpusprep.engine.stage import RunContext
from corpusprep.read import ReadOptions
in_process = RunContext(LocalExecutor(1), progress=False)
corpus, vocab, out = map(Path, sys.argv[1:4])
options = PairOptions(dupe_factor=1, validation_fraction=0.0)
build_pairs([vocab.parent / "warm.txt"], vocab, out.parent / "warm", options, ReadOptions(format="text"),
            context=in_process)  # imports, tokenizer and splitter loaded: the baseline
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
stats = build_pairs([corpus], vocab, out, options, ReadOptions(format="text"), context=in_process)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"growth": after - before, "documents": stats["documents"], "pairs": stats["pairs"]}))
"""


@pytest.mark.slow  # ~2.9 s idle
def test_one_long_document_is_built_in_memory_bounded_per_byte(tmp_path):
    """8 MB in one document (one paragraph a line): peak memory grows by a bounded number of bytes per byte
    of text (before the fix: over 100, the tokenizer holding the whole document at once)."""
    vocab = make_vocab(tmp_path / "vocab")
    rng = np.random.default_rng(0)
    lines, size = [], 0
    while size < 8_000_000:
        words = rng.integers(0, 300, int(rng.integers(40, 200)))
        line = ". ".join(" ".join(f"w{w}" for w in words[i : i + 12]) for i in range(0, len(words), 12)) + "."
        lines.append(line)
        size += len(line) + 1
    corpus = tmp_path / "book.txt"
    corpus.write_text("\n".join(lines) + "\n\nA short second document. It is the NotNext partner.\n")
    (vocab.parent / "warm.txt").write_text("w1 w2. w3 w4.\n\nw5 w6. w7 w8.\n")
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, str(corpus), str(vocab), str(tmp_path / "pairs")],
        capture_output=True, text=True, check=True,
    )
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["documents"] == 2 and measured["pairs"] > 1000
    per_byte = measured["growth"] / corpus.stat().st_size
    assert per_byte < 40, f"{per_byte:.1f} bytes of memory per byte of text"
