"""Readers and writers exclude each other: a command that would replace an output refuses while a corpusprep
process reads it (the trainer its shards), and the trainer stops with one line when a shard it reads was
replaced anyway (a machine the lock does not reach). The trainer never takes another command's output,
finished, unfinished or being written, as its run dir."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from corpusprep.engine.files import write_json
from corpusprep.engine.lock import LOCK_NAME
from corpusprep.errors import DataError
from tests.security.trust_world import (
    REPO,
    copy,
    corpusprep,
    pipeline,
    train_args,
    trainer_run,
    tree_digest,
)


def wait_for(condition, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert process.poll() is None, process.communicate()[1][-2000:]
        assert time.time() < deadline, "timed out"
        time.sleep(0.2)


@pytest.mark.slow  # ~5.8 s idle
def test_shard_overwrite_refuses_while_a_trainer_reads_the_shards(outputs, tmp_path):
    shards = copy(outputs.shards, tmp_path / "shards")
    before = tree_digest(shards, skip=shards / LOCK_NAME)
    run = tmp_path / "run"
    trainer = subprocess.Popen(
        [sys.executable, "-m", "trainer.run", *train_args(shards, run, 10**5), "--checkpoint-every", "10000"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"OMP_NUM_THREADS": "1"},
    )
    try:
        metrics = run / "metrics.jsonl"
        wait_for(lambda: metrics.is_file() and metrics.stat().st_size, trainer)  # it reads the shards now
        result = corpusprep("shard", outputs.pairs, "--vocab", outputs.vocab, "-o", shards, "--num-shards",
                            "3", "--seed", "7", "--overwrite", "--no-progress")
        assert result.code == 2, result.err
        assert f"a corpusprep process is reading this output (pid {trainer.pid})" in result.line
        assert trainer.poll() is None  # the trainer trains on
    finally:
        trainer.kill()
        trainer.wait()
    assert tree_digest(shards, skip=shards / LOCK_NAME) == before
    # the reader gone, the writer may replace the output
    done = corpusprep("shard", outputs.pairs, "--vocab", outputs.vocab, "-o", shards, "--num-shards", "3",
                      "--seed", "7", "--overwrite", "--no-progress")
    assert done.code == 0, done.err


def test_a_shard_replaced_under_a_reading_trainer_stops_it_in_one_line(outputs, tmp_path):
    """Where the lock does not reach (another machine on NFS): each shard's identity is checked as it is
    opened, so the trainer never trains on a mix of old and new rows."""
    from trainer.config import DataConfig
    from trainer.data import ShardStream
    from trainer.shards import open_shards

    shards = copy(outputs.shards, tmp_path / "shards")
    stream = ShardStream(open_shards(shards), "train", DataConfig(batch_size=8, chunk_rows=32), shuffle=False,
                         loop=False)
    first, second = (f.path for f in stream.files)
    batches = iter(stream)
    next(batches)  # reading the first shard
    replacement = tmp_path / "new.parquet"
    shutil.copyfile(second, replacement)
    os.replace(replacement, second)  # as `corpusprep shard --overwrite` renames a new shard into place
    with pytest.raises(DataError, match=rf"{second}: replaced or changed since this run started"):
        for _ in batches:
            pass


def test_the_trainer_never_takes_another_commands_output_as_its_run_dir(outputs, tmp_path_factory, tmp_path):
    finished = copy(outputs.pairs, tmp_path / "finished")
    unfinished = tmp_path / "unfinished"  # a build-pairs killed after it started: its record, no manifest
    write_json(unfinished / ".work" / "run.json", {"fingerprint": "0" * 64, "identity": {"kind": "pairs"}})
    running = tmp_path / "running"  # a vocab being written now: its writer holds the lock
    running.mkdir()
    hold = ("import sys; from corpusprep.engine.lock import exclusive_dir\n"
            "with exclusive_dir(sys.argv[1]):\n    print('held', flush=True); sys.stdin.read()")
    writer = subprocess.Popen([sys.executable, "-c", hold, str(running)], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "held\n"
        runs = {
            finished: "holds corpusprep pairs",
            unfinished: "holds an unfinished corpusprep pairs",
            running: f"another corpusprep run is writing here (pid {writer.pid})",
            copy(pipeline(tmp_path_factory, outputs), tmp_path / "pipeline"): "holds a pipeline run",
        }
        for run_dir, says in runs.items():
            before = tree_digest(run_dir, skip=run_dir / LOCK_NAME)
            result = trainer_run(*train_args(outputs.shards, run_dir, 1))
            assert result.code == 2 and says in result.line, (run_dir.name, result.err)
            assert len(result.err.strip().splitlines()) == 1, result.err
            assert tree_digest(run_dir, skip=run_dir / LOCK_NAME) == before, run_dir.name
    finally:
        writer.kill()
        writer.wait()
