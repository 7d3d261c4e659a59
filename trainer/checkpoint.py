"""Checkpoints: RUN_DIR/checkpoints/step-NNNNNNN/ holding separate state dicts.

    model.pt      plain state_dict (no `_orig_mod.` / `module.` prefixes); the format export reads
    optimizer.pt  scheduler.pt
    trainer.pt    step, batches consumed by each rank's data stream, RNG states
    config.json   {"train": resolved TrainConfig, "model": BertConfig, "vocab": the shards' {sha256, size}}

A checkpoint is written into a hidden temporary directory and renamed into place, so a directory under a
final name is always complete; a killed write leaves only a temp dir, removed on the next start.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from corpusprep.errors import UsageError, os_error_in
from trainer.config import ModelConfig
from trainer.model import BertConfig

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
        try:
            with open(tmp / f"{name}.pt", "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
        except Exception as error:  # torch reports a full disk as a RuntimeError: name the file
            cause = os_error_in(error)
            if cause is None or cause.filename is not None:
                raise
            raise OSError(cause.errno, cause.strerror, str(final / f"{name}.pt")) from error
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


def config_record(train_config: Any, bert_config: Any, vocab: dict | None = None) -> dict:
    record = {"train": asdict(train_config), "model": asdict(bert_config)}
    if vocab:  # as import_hf writes it: checkpoint.init_from checks it against the shards' vocab
        record["vocab"] = {"sha256": vocab.get("sha256"), "size": vocab.get("size")}
    return record


def init_weights(
    source: str | Path, model: ModelConfig, vocab_size: int, vocab_sha256: str | None, where: Path
) -> tuple[BertConfig, dict[str, torch.Tensor], Path]:
    """checkpoint.init_from: (architecture, weights, checkpoint dir) to start a run from.

    `source`: a run dir (its newest checkpoint), a step-N checkpoint or a `trainer.import_hf` output. The
    architecture is the saved one; `model` may repeat it but not contradict it, and its dropout rates
    (training settings) replace the saved ones. The vocab must be the shards' (`where`: their manifest):
    same size, and the same sha256 when the checkpoint records one.
    """
    from trainer.export import check_state, find_checkpoint, load_checkpoint

    path = find_checkpoint(Path(source))
    saved_model, state, saved = load_checkpoint(path)
    if conflicts := model.conflicts(saved_model):
        raise UsageError(f"{path}: init_from a model other than the requested one: {', '.join(conflicts)}")
    if saved_model.vocab_size != vocab_size:
        raise UsageError(f"{path}: a model of {saved_model.vocab_size} tokens; {where}: {vocab_size} tokens")
    saved_sha = saved.get("vocab", {}).get("sha256")
    if saved_sha and vocab_sha256 and saved_sha != vocab_sha256:
        raise UsageError(
            f"{path / 'config.json'}: vocab sha256 {saved_sha[:12]}... but {where}: {vocab_sha256[:12]}... "
            "(build the pairs and shards with the model's vocab)"
        )
    check_state(state, saved_model, path / "model.pt")  # every weight, right shapes: nothing left random
    bert = replace(saved_model, dropout=model.dropout, attention_dropout=model.attention_dropout)
    return bert, state, path


def _test_hook(step: int) -> None:
    """For the reliability tests: SIGKILL this process in the middle of writing checkpoint `step`."""
    if os.environ.get("TRAINER_TEST_KILL_IN_CHECKPOINT") == str(step):
        os.kill(os.getpid(), 9)
