"""trainer/threads.py: the CPU thread policy every training entry point applies before torch is imported
(bench/cpu_threads.py measures what it buys on a shared machine)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainer import threads

REPO = Path(__file__).resolve().parents[2]


def test_the_team_is_as_wide_as_the_cores_this_process_may_use(monkeypatch, tmp_path):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    monkeypatch.setattr(threads, "CGROUP_V2", tmp_path / "none")
    monkeypatch.setattr(threads, "CGROUP_V1", (tmp_path / "none", tmp_path / "none"))
    assert threads.available_cores() == 8
    assert [threads.thread_count(p) for p in (1, 2, 3, 16)] == [8, 4, 2, 1]  # torchrun's processes share them
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # a container's 1.5 CPUs on a bigger host
    monkeypatch.setattr(threads, "CGROUP_V2", tmp_path / "cpu.max")
    assert threads.available_cores() == 2
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.available_cores() == 8
    monkeypatch.setattr(threads, "CGROUP_V2", tmp_path / "none")
    (tmp_path / "quota").write_text("300000")  # cgroup v1
    (tmp_path / "period").write_text("100000")
    monkeypatch.setattr(threads, "CGROUP_V1", (tmp_path / "quota", tmp_path / "period"))
    assert threads.available_cores() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "5")  # the user's choice wins
    assert threads.thread_count(2) == 5


# Records OpenMP's environment at the moment torch is first imported, then runs COMMAND.
FIRST_TORCH_IMPORT = """
import importlib.abc, json, os, sys
seen = {}
class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" and not seen:
            seen.update(policy=os.environ.get("OMP_WAIT_POLICY"), threads=os.environ.get("OMP_NUM_THREADS"))
        return None
sys.meta_path.insert(0, Watch())
try:
    COMMAND
finally:
    import torch
    print(json.dumps({**seen, "torch_threads": torch.get_num_threads()}))
"""


def first_torch_import(command: str, **env: str) -> dict:
    import json

    environment = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")} | env
    environment["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", FIRST_TORCH_IMPORT.replace("COMMAND", command)],
                          capture_output=True, text=True, cwd=REPO, env=environment)
    assert done.stdout, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_policy_is_set_before_torch_loads_openmp_and_an_explicit_choice_wins():
    seen = first_torch_import("from trainer import threads; threads.configure(1)")
    assert seen["policy"] == threads.WAIT_POLICY and seen["torch_threads"] == threads.available_cores()
    seen = first_torch_import("from trainer import threads; threads.configure(1)",
                              OMP_WAIT_POLICY="ACTIVE", OMP_NUM_THREADS="1")
    assert (seen["policy"], seen["torch_threads"]) == ("ACTIVE", 1)


@pytest.mark.slow
def test_trainer_run_applies_it_before_importing_torch(tmp_path):
    """`python -m trainer.run` (here failing on missing shards, after the policy is applied)."""
    args = ["--shards", str(tmp_path / "none"), "--run-dir", str(tmp_path / "r")]
    command = f"from trainer.run import main; main({args!r})"
    seen = first_torch_import(command)
    assert seen["policy"] == threads.WAIT_POLICY
