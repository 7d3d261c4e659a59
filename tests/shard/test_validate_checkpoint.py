"""`corpusprep validate` on trainer outputs: a checkpoint file that would not load is reported, by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from corpusprep.engine.outputs import validate as validate_output
from trainer import checkpoint
from trainer.config import load_config
from trainer.model import BertForPreTraining
from trainer.optim import build_optimizer, build_scheduler


def write_step(run: Path, step: int) -> Path:
    """A checkpoint as the trainer writes it (a tiny BERT, its optimizer and schedule after `step` steps, its
    settings): validate checks it as the trainer would before using it."""
    train = load_config(None, ["schedule.steps=10", "schedule.warmup_steps=1"])
    bert = train.model.bert_config(vocab_size=50)
    model = BertForPreTraining(bert)
    optimizer = build_optimizer(model, train.optim, fused=False)
    scheduler = build_scheduler(optimizer, train.schedule)
    for _ in range(step):
        sum(p.sum() for p in model.parameters()).backward()
        optimizer.step()
        scheduler.step()
    states = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "trainer": {"step": step, "positions": [{"batches": step, "rows": [8 * step]}],
                    "rng": [{"cpu": torch.get_rng_state(), "cuda": None}], "last_metrics": {}},
    }
    return checkpoint.save(run, step, states, checkpoint.config_record(train, bert), keep=5)


@pytest.mark.slow  # ~1.6 s idle
def test_a_truncated_or_damaged_checkpoint_file_is_reported(tmp_path):
    run = tmp_path / "run"
    first, newest = write_step(run, 1), write_step(run, 2)
    assert validate_output(run)[1] == []
    weights = (newest / "weights.safetensors").read_bytes()
    (newest / "weights.safetensors").write_bytes(weights[: len(weights) // 2])  # a copy cut short
    kind, problems, _ = validate_output(run)
    assert kind == "trainer run directory"
    assert problems == ["step-0000002/weights.safetensors: missing, or not the file config.json records "
                        "(size, sha256)"]
    middle = len(weights) // 2  # a flipped byte inside a tensor: the sha256 config.json records catches it
    (newest / "weights.safetensors").write_bytes(
        weights[:middle] + bytes([weights[middle] ^ 0xFF]) + weights[middle + 1 :]
    )
    assert validate_output(newest)[1] == [
        "step-0000002/weights.safetensors: missing, or not the file config.json records (size, sha256)"
    ]
    (first / "trainer.json").write_bytes(b"not JSON at all")
    assert "step-0000001/trainer.json: missing, or not the file config.json records (size, sha256)" in (
        validate_output(run)[1]
    )
