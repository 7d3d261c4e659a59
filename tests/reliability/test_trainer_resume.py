"""The trainer survives SIGKILL: during training or in the middle of a checkpoint write, `--resume`
continues from the last complete checkpoint and ends with the same weights as an uninterrupted run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from corpusprep.engine import faults
from corpusprep.engine.rng import rng_for
from tests.trainer.conftest import build_shards
from trainer import checkpoint

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    return build_shards(tmp_path_factory.mktemp("shards"), max_mb=0.5, dupe_factor=1, num_shards=2)


def command(shards: Path, run_dir: Path, steps: int, *extra: str) -> list[str]:
    sets = [
        "data.batch_size=8",
        "data.chunk_rows=64",
        "schedule.warmup_steps=2",
        "eval.every=0",
        "eval.max_batches=1",
        "logging.every=1",
        "checkpoint.keep=2",
    ]
    return [sys.executable, "-m", "trainer.run", "--shards", str(shards), "--run-dir", str(run_dir),
            "--steps", str(steps), "--checkpoint-every", "4", "--device", "cpu",
            *[x for s in sets for x in ("--set", s)], *extra]


def run(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    env = os.environ | {"OMP_NUM_THREADS": "1"} | (env or {})
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)


def final_weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return checkpoint.load(checkpoint.latest(run_dir), "model")


def assert_same_weights(a: Path, b: Path) -> None:
    wa, wb = final_weights(a), final_weights(b)
    assert wa.keys() == wb.keys()
    for name in wa:
        assert torch.equal(wa[name], wb[name]), name


@pytest.fixture(scope="module")
def uninterrupted(shards, tmp_path_factory) -> dict[int, Path]:
    runs = {}
    for steps in (12, 40):
        run_dir = tmp_path_factory.mktemp(f"whole{steps}")
        done = run(command(shards, run_dir, steps))
        assert done.returncode == 0, done.stderr[-2000:]
        runs[steps] = run_dir
    return runs


@pytest.mark.slow  # trains a model: ~27 s with its module fixtures (2 cores, idle)
def test_sigkill_during_checkpoint_write(shards, uninterrupted, tmp_path):
    killed = run(command(shards, tmp_path, 12), env=faults.spec("checkpoint_file", 5))
    assert killed.returncode == -signal.SIGKILL
    assert [step for step, _ in checkpoint.list_checkpoints(tmp_path)] == [4]  # step 8 never appeared
    assert list((tmp_path / "checkpoints").glob(".step-0000008.tmp-*"))  # killed with model.pt written

    resumed = run(command(shards, tmp_path, 12, "--resume"))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed from" in resumed.stdout and "at step 4" in resumed.stdout
    assert not list((tmp_path / "checkpoints").glob(".step-*"))  # the partial write was cleaned up
    assert_same_weights(tmp_path, uninterrupted[12])


@pytest.mark.slow
def test_sigkill_at_a_random_time_during_training(shards, uninterrupted, tmp_path):
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(command(shards, tmp_path, 40), cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not checkpoint.list_checkpoints(tmp_path) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(float(rng_for(int(time.time()), "kill").uniform(0, 1.5)))  # anywhere in what follows
    process.send_signal(signal.SIGKILL)
    process.wait()
    # the kill may land anywhere, even after the last checkpoint: a resume must end the same in every case
    assert checkpoint.list_checkpoints(tmp_path) or process.returncode == 0

    resumed = run(command(shards, tmp_path, 40, "--resume"))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_weights(tmp_path, uninterrupted[40])


@pytest.mark.slow  # a module fixture that builds shards: ~6.6 s
def test_verify_catches_a_corrupted_shard(shards, tmp_path):
    corrupted = tmp_path / "shards"
    shutil.copytree(shards, corrupted)
    victim = corrupted / "train" / "shard-00001.parquet"
    data = bytearray(victim.read_bytes())
    for i in range(100, 110):  # flip bytes in place: the size still matches the manifest
        data[len(data) // 2 + i] ^= 0x5A
    victim.write_bytes(bytes(data))
    done = run(command(corrupted, tmp_path / "run", 4, "--verify"))
    assert done.returncode == 1
    message = done.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    assert str(victim) in message and "sha256" in message
    assert not (tmp_path / "run" / "checkpoints").exists()
