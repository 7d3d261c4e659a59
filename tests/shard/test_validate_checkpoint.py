"""`corpusprep validate` on trainer outputs: a checkpoint file that would not load is reported, by name."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from corpusprep.shard.validate import validate_output


def write_step(run: Path, step: int) -> Path:
    """A checkpoint as the trainer writes it (state dicts of a small model and its optimizer)."""
    path = run / "checkpoints" / f"step-{step:07d}"
    path.mkdir(parents=True)
    model = torch.nn.Linear(64, 64)
    torch.save(model.state_dict(), path / "model.pt")
    torch.save(torch.optim.AdamW(model.parameters()).state_dict(), path / "optimizer.pt")
    torch.save({}, path / "scheduler.pt")
    torch.save({"step": step}, path / "trainer.pt")
    (path / "config.json").write_text(json.dumps({"model": {}}))
    return path


def test_a_truncated_or_damaged_checkpoint_file_is_reported(tmp_path):
    run = tmp_path / "run"
    first, newest = write_step(run, 1), write_step(run, 2)
    assert validate_output(run)[1] == []
    model = (newest / "model.pt").read_bytes()
    (newest / "model.pt").write_bytes(model[: len(model) // 2])  # a copy cut short
    kind, problems, _ = validate_output(run)
    assert kind == "trainer run directory"
    assert len(problems) == 1 and problems[0].startswith("step-0000002/model.pt: damaged or truncated")
    middle = len(model) // 2  # a flipped byte inside a tensor: the zip member's CRC catches it
    (newest / "model.pt").write_bytes(model[:middle] + bytes([model[middle] ^ 0xFF]) + model[middle + 1 :])
    assert validate_output(newest)[1] == ["step-0000002/model.pt: damaged: model/data/0 fails its checksum"]
    (first / "optimizer.pt").write_bytes(b"not a torch file at all")
    assert "step-0000001/optimizer.pt: not a torch.save file" in validate_output(run)[1]
