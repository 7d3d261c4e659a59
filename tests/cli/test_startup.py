"""Start-up stays cheap: the command line imports a heavy library only in a command that uses it, and
build-pairs and shard never import pandas (pyarrow's `pa.array` and `to_numpy` would: 0.2-0.3 CPU-s each),
nor rich under --no-progress (~0.03 CPU-s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.pair.helpers import make_vocab, synthetic_documents, write_bert

HEAVY = ("pandas", "pyarrow", "numpy", "tokenizers", "pydantic", "rich", "multiprocessing.pool")
REPORT = "import sys; from corpusprep.cli import main; sys.argv = ['corpusprep', *sys.argv[1:]]\n"


def loaded_after(*argv: str) -> set[str]:
    """The HEAVY modules loaded by the end of `corpusprep ARGV` (run to completion in a fresh interpreter)."""
    code = (
        REPORT + "import atexit\n"
        f"atexit.register(lambda: print(sorted(set({HEAVY!r}) & set(sys.modules)), file=sys.__stdout__))\n"
        "main()\n"
    )
    run = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return set(eval(run.stdout.strip().splitlines()[-1]))


def test_help_imports_no_heavy_library():
    assert loaded_after("--help") == set()


@pytest.mark.slow  # ~3.8 s idle (all cases)
@pytest.mark.parametrize("objective", ["nsp", "sop", "none"])
def test_build_pairs_and_shard_never_import_pandas_nor_rich_without_progress(tmp_path: Path, objective: str):
    vocab = make_vocab(tmp_path / "vocab")
    corpus = write_bert(tmp_path / "corpus.txt", synthetic_documents(40, seed=0))
    pairs, shards = tmp_path / "pairs", tmp_path / "shards"
    build = loaded_after("build-pairs", str(corpus), "--vocab", str(vocab), "-o", str(pairs), "--no-progress",
                         "--objective", objective)
    assert not {"pandas", "rich"} & build and "pyarrow" in build  # it ran
    shard = loaded_after("shard", str(pairs), "--vocab", str(vocab), "-o", str(shards), "--no-progress",
                         "--mask-strategy", "span")
    assert not {"pandas", "rich"} & shard and (shards / "manifest.json").is_file()
