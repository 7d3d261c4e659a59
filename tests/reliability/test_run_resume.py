"""`corpusprep run` killed at any point resumes to the very bytes of an uninterrupted run; one writer per run
dir; an existing directory is never taken over without --overwrite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpusprep.engine import faults
from tests.pipelines.helpers import (
    DEMO,
    REPO,
    assert_no_partial_files,
    cli,
    pairs_digests,
    shard_digests,
    small_overrides,
    write_small_corpus,
    write_small_vocab,
)
from tests.reliability.helpers import lock_holder, output_files

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("run_resume")]


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[list[str], dict]:
    """Overrides for a small run (shared corpus and vocab), and the digests of its uninterrupted output."""
    root = tmp_path_factory.mktemp("resume")
    corpus = write_small_corpus(root / "corpus.jsonl", 0.15)
    args = [
        arg
        for item in small_overrides(corpus, write_small_vocab(corpus, root / "vocab"))
        for arg in ("--set", item)
    ]
    args += ["--until", "shard", "--workers", "2"]
    reference = root / "reference"
    done = cli(reference, *args)
    assert done.returncode == 0, done.stderr
    return args, {"pairs": pairs_digests(reference / "pairs"), "shards": shard_digests(reference / "shards")}


def assert_same_as_reference(run_dir: Path, reference: dict) -> None:
    assert pairs_digests(run_dir / "pairs") == reference["pairs"]
    assert shard_digests(run_dir / "shards") == reference["shards"]
    assert not [p for p in run_dir.rglob("*.tmp-*")]


@pytest.mark.parametrize("kill_after", [3, 25])
def test_killed_after_k_tasks_then_rerun_gives_identical_output(tmp_path, setup, kill_after):
    """The hook SIGKILLs the runner as the k-th task finishes: during tokenizing, pairing, or masking."""
    args, reference = setup
    run_dir = tmp_path / "run"
    killed = cli(run_dir, *args, env=faults.spec("task_done", kill_after))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not killed.orphans  # its pool workers noticed and exited
    assert not (run_dir / "report.json").exists()
    assert_no_partial_files(run_dir)
    resumed = cli(run_dir, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr  # the interrupted stage continued from its finished tasks
    assert_same_as_reference(run_dir, reference)


def test_killed_after_seconds_then_rerun_gives_identical_output(tmp_path, setup):
    args, reference = setup
    run_dir = tmp_path / "run"
    for delay in (1.5, 3.0):  # two kills in a row at arbitrary points, wherever the run happens to be
        command = [sys.executable, "-m", "corpusprep", "run", str(DEMO), "--run-dir", str(run_dir), *args]
        proc = subprocess.Popen(command, cwd=REPO, start_new_session=True, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert_no_partial_files(run_dir)
    resumed = cli(run_dir, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert_same_as_reference(run_dir, reference)
    again = cli(run_dir, *args)
    assert "every stage complete; nothing to do" in again.stderr


def test_second_writer_fails_at_start_and_first_run_is_untouched(tmp_path, setup):
    args, reference = setup
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "corpusprep", "run", str(DEMO), "--run-dir", str(run_dir), *args]
    first = subprocess.Popen(command, cwd=REPO, start_new_session=True, stderr=subprocess.PIPE, text=True)
    lock_holder(run_dir, first)
    # Frozen (its pool too), the first still holds the lock when the second gets there: the second makes
    # all the checks the first made before its lock (the train stage's import torch), by which time a
    # first run left running may have finished its small stages, and the second is no second writer.
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        before = output_files(run_dir)
        second = cli(run_dir, *args)
        assert output_files(run_dir) == before  # the second touched nothing
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    assert second.returncode == 2
    assert second.stderr.strip().splitlines() == [
        f"corpusprep: error: {run_dir}: another corpusprep run is writing here (pid {first.pid}); "
        "wait for it or pick another output directory"
    ]
    assert first.wait(timeout=120) == 0, first.stderr.read()
    assert_same_as_reference(run_dir, reference)


def test_existing_directory_is_not_taken_over_without_overwrite(tmp_path, setup):
    args, _ = setup
    run_dir = tmp_path / "mine"
    run_dir.mkdir()
    (run_dir / "results.csv").write_text("precious\n")
    refused = cli(run_dir, *args)
    assert refused.returncode == 2
    assert "not a corpusprep run directory; pass --overwrite" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == ["results.csv"]  # not even a lock
    assert (run_dir / "results.csv").read_text() == "precious\n"
