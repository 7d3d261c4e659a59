"""Checkpoints: RUN_DIR/checkpoints/step-NNNNNNN/ holding separate state dicts.

    model.pt      plain state_dict (no `_orig_mod.` / `module.` prefixes); the format export reads
    optimizer.pt  scheduler.pt
    trainer.pt    step, batches consumed by each rank's data stream, RNG states
    config.json   the resolved TrainConfig, plus the model's BertConfig

A checkpoint is written into a hidden temporary directory and renamed into place, so a directory under a
final name is always complete; a killed write leaves only a temp dir, removed on the next start.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

STEP_DIR = re.compile(r"^step-(\d{7,})$")


def checkpoint_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints, oldest first."""
    root = checkpoint_dir(run_dir)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := STEP_DIR.match(p.name)) and p.is_dir()]
    return sorted(found)


def latest(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1][1] if found else None


def remove_partial(run_dir: Path) -> int:
    """Delete temp directories of checkpoint writes that were killed."""
    root = checkpoint_dir(run_dir)
    stale = [p for p in root.glob(".step-*.tmp-*")] if root.is_dir() else []
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)
    return len(stale)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save(run_dir: Path, step: int, states: dict[str, Any], config: dict, keep: int) -> Path:
    """Write states[name] to name.pt and config.json, atomically as a directory; keep the newest `keep`."""
    root = checkpoint_dir(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:07d}"
    tmp = root / f".{final.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name, state in states.items():
        with open(tmp / f"{name}.pt", "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        _test_hook(step)
    (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    _fsync_dir(tmp)
    if final.exists():  # a rerun of the same step after a crash that followed the rename
        shutil.rmtree(final)
    os.replace(tmp, final)
    _fsync_dir(root)
    for _, old in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load(path: Path, name: str, map_location: str | torch.device = "cpu") -> Any:
    return torch.load(path / f"{name}.pt", map_location=map_location, weights_only=False)


def read_config(path: Path) -> dict:
    return json.loads((path / "config.json").read_text())


def config_record(train_config: Any, bert_config: Any) -> dict:
    return {"train": asdict(train_config), "model": asdict(bert_config)}


def _test_hook(step: int) -> None:
    """For the reliability tests: SIGKILL this process in the middle of writing checkpoint `step`."""
    if os.environ.get("TRAINER_TEST_KILL_IN_CHECKPOINT") == str(step):
        os.kill(os.getpid(), 9)
