"""`build-pairs` and `shard` SIGKILLed at several points in a row, then finished: the output is byte-identical
to an uninterrupted run, and while a killed run lies dead no file under a final name is partial.

The kill points: as the k-th task finishes (the executor's test hook), over every phase of each command
(tokenize, pairs; masking pass, shard writing), and at seeded arbitrary moments (reading, importing, in the
middle of a Parquet write). test_pairs_resume.py and test_shard_integrity.py each show one kill point;
these chain several on one output directory, so each rerun also resumes from a resumed run's leftovers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from corpusprep.engine.rng import rng_for
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.reliability.helpers import (
    REPO,
    assert_final_files_complete,
    command,
    corpusprep,
    environment,
    output_files,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crash_resume")]

DOCS = 400  # 2 tokenize tasks (256 documents a chunk), 8 partitions of 50 documents, 2 dupe passes
TOKENIZE_TASKS = 2


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("crash")
    return write_bert(root / "corpus.txt", synthetic_documents(DOCS, seed=8)), make_vocab(root / "vocab")


def pairs_args(corpus: Path, vocab: Path, out: Path) -> list:
    return ["build-pairs", corpus, "--vocab", vocab, "-o", out, "--input-format", "bert", "--workers", "1",
            "--dupe-factor", "2", "--docs-per-partition", "50", "--no-progress"]


def shard_args(pairs: Path, vocab: Path, out: Path) -> list:
    return ["shard", pairs, "--vocab", vocab, "-o", out, "--num-shards", "4", "--dupe-masks", "2",
            "--seed", "5", "--workers", "1", "--no-progress"]


def comparable(directory: Path) -> dict[str, bytes]:
    """Every output file, artifact.json and stats.json included: they hold no run times."""
    return output_files(directory)


@pytest.fixture(scope="module")
def pairs_reference(inputs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pairs_reference")
    done = corpusprep(*pairs_args(*inputs, out))
    assert done.returncode == 0, done.stderr
    return out


def kill_after_seconds(args: list, delay: float) -> int:
    """Start `corpusprep ARGS`, SIGKILL it (and any worker) after `delay` seconds; its exit status."""
    proc = subprocess.Popen(command(*args), cwd=REPO, env=environment(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()


def crash_repeatedly(args: list, out: Path, task_kills: list[int], delays: list[float], final: str) -> None:
    """Kill a run after each of `task_kills` tasks, then after each delay, checking the leftovers every
    time; then finish it."""
    for k in task_kills:
        killed = corpusprep(*args, kill_after=k)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert not (out / final).exists()
        assert_final_files_complete(out)
    for delay in delays:
        # It may have finished, or died after writing `final` (cleaning up): the rerun must cope with all.
        assert kill_after_seconds(args, delay) in (0, -signal.SIGKILL)
        assert_final_files_complete(out)
    done = corpusprep(*args)
    assert done.returncode == 0, done.stderr
    assert not list(out.rglob(".*.tmp-*"))


def test_build_pairs_killed_at_several_points(inputs, pairs_reference, tmp_path):
    reference = comparable(pairs_reference)
    pair_tasks = sum(1 for name in reference if name.endswith(".parquet"))
    assert pair_tasks >= 12
    # Tasks finished by each killed run: the first tokenize task; the second (tokenizing done, no pairs);
    # then into the pairs, twice; the last run dies with one pairs task left.
    kills = [1, 1, 3, pair_tasks // 2, pair_tasks - 3 - pair_tasks // 2 - 1]
    assert sum(kills) == TOKENIZE_TASKS + pair_tasks - 1
    out = tmp_path / "pairs"
    delays = [float(d) for d in rng_for(0, "crash-pairs").uniform(0.2, 1.5, size=2)]
    # The delays act on a fresh directory: the read stage and the first tasks are where they land.
    crash_repeatedly(pairs_args(*inputs, tmp_path / "timed"), tmp_path / "timed", [], delays, "stats.json")
    assert comparable(tmp_path / "timed") == reference
    crash_repeatedly(pairs_args(*inputs, out), out, kills, [], "stats.json")
    assert comparable(out) == reference


def test_shard_killed_at_several_points(inputs, pairs_reference, tmp_path):
    vocab = inputs[1]
    reference_dir = tmp_path / "reference"
    done = corpusprep(*shard_args(pairs_reference, vocab, reference_dir))
    assert done.returncode == 0, done.stderr
    reference = comparable(reference_dir)
    masks = sum(1 for name in output_files(pairs_reference) if name.endswith(".parquet"))  # one task a file
    shards = sum(1 for name in reference if name.endswith(".parquet"))
    # Into the masking pass; at its end; one shard written; all shards but the last.
    kills = [masks // 2, masks - masks // 2, 1, shards - 2]
    assert sum(kills) == masks + shards - 1
    out = tmp_path / "shards"
    crash_repeatedly(shard_args(pairs_reference, vocab, out), out, kills, [], "manifest.json")
    assert comparable(out) == reference
    delays = [float(d) for d in rng_for(0, "crash-shard").uniform(0.2, 1.5, size=2)]
    timed = tmp_path / "timed"
    crash_repeatedly(shard_args(pairs_reference, vocab, timed), timed, [], delays, "manifest.json")
    assert comparable(timed) == reference


def test_killed_run_never_leaves_a_partial_parquet_under_a_final_name(inputs, pairs_reference, tmp_path):
    """Kill while a Parquet file is being written: the hidden temporary holds the partial bytes."""
    vocab = inputs[1]
    out = tmp_path / "shards"
    code = ("import os, signal, sys, pyarrow.parquet as pq\n"
            "real = pq.write_table\n"
            "def die_midway(table, where, **kw):\n"
            "    real(table.slice(0, len(table) // 2), where, **kw)\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n"
            "pq.write_table = die_midway\n"
            "from corpusprep.cli import main\n"
            "sys.argv[0] = 'corpusprep'\n"
            "main()\n")
    args = [str(a) for a in shard_args(pairs_reference, vocab, out)]
    killed = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=environment(),
                            capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    temps = list(out.rglob(".shard-*.parquet.tmp-*"))
    assert len(temps) == 1 and temps[0].stat().st_size > 0  # the half-written shard, under a hidden name
    assert assert_final_files_complete(out) == 0 and not (out / "manifest.json").exists()
    done = corpusprep(*args)  # removes the stale temporary and writes the shard whole
    assert done.returncode == 0, done.stderr
    assert not list(out.rglob(".*.tmp-*"))
    done = corpusprep("validate", out)
    assert done.returncode == 0, done.stderr
