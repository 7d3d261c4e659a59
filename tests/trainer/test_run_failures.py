"""What a training run says when it cannot go on: a diverged loss, a damaged checkpoint config, a resume
with nothing to resume; and what a resume accepts: the same shards copied to another path."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from tests.interop.helpers import random_model, write_checkpoint, write_vocab
from trainer import checkpoint
from trainer import export as ex
from trainer import train as train_module
from trainer.config import preset
from trainer.run import main


def run_args(shards: Path, run_dir: Path, *extra: str) -> list[str]:
    return ["--shards", str(shards), "--run-dir", str(run_dir), "--steps", "4", "--warmup-steps", "1",
            "--batch-size", "8", "--lr", "1e-3", "--checkpoint-every", "2", "--log-every", "1",
            "--device", "cpu", "--set", "data.chunk_rows=64", "--set", "eval.max_batches=1",
            *extra]


@pytest.mark.parametrize("fused", [False, True], ids=["host-check", "skipped-on-device"])
def test_a_diverged_loss_is_one_line_and_no_checkpoint_holds_it(tiny_shards, tmp_path, capsys, monkeypatch,
                                                                 fused):
    """Both guards of train_step: the host read at each step (the CPU's), and fused AdamW skipping the step
    on the device (CUDA's: found_inf, no host read) with the error at the next logging step, which here
    (--log-every 2) comes a step later: the same one line, the same checkpoints, finite weights."""
    real, calls = train_module.forward_loss, [0]
    if fused:  # CPU AdamW fuses too, and takes found_inf as the CUDA kernel does
        build = train_module.build_optimizer
        monkeypatch.setattr(train_module, "build_optimizer", lambda m, c, fused: build(m, c, fused=True))

    def nan_at_step_3(model, batch, autocast):
        out = real(model, batch, autocast)
        if model.training:
            calls[0] += 1
            if calls[0] == 3:
                return (*out[:2], out[2] * math.nan, *out[3:])
        return out

    monkeypatch.setattr(train_module, "forward_loss", nan_at_step_3)
    run = tmp_path / "run"
    assert main(run_args(tiny_shards, run, *(["--log-every", "2", "--steps", "6"] if fused else []))) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("error: step 3: the loss is nan") and "lower --lr (optim.lr=0.001)" in err
    assert [step for step, _ in checkpoint.list_checkpoints(run)] == [2]  # the step before, intact
    weights = checkpoint.load(checkpoint.latest(run), "model")
    assert all(torch.isfinite(w).all() for w in weights.values())
    assert calls[0] == (4 if fused else 3)  # the skipped step 3 is reported after step 4, at its log


def test_a_step_skipped_on_the_device_leaves_weights_and_optimizer_as_they_were(tiny_shards, tmp_path,
                                                                                monkeypatch):
    """found_inf on fused AdamW, as train_step sets it: a non-finite step changes no weight, no moment and
    no step count, and reads nothing on the host; check_finite then names the step."""
    from tests.trainer.test_train import small_run
    from trainer.config import load_config
    from trainer.dist import Dist
    from trainer.train import Trainer

    build = train_module.build_optimizer
    monkeypatch.setattr(train_module, "build_optimizer", lambda m, c, fused: build(m, c, fused=True))
    config = load_config(None, small_run(tiny_shards, tmp_path / "run"))
    trainer = Trainer(config, Dist(), torch.device("cpu"))
    assert trainer.skips_on_device
    trainer.train_step()
    before = {k: v.clone() for k, v in trainer.raw_model.state_dict().items()}
    moments = {k: v.clone() for k, v in trainer.optimizer.state_dict()["state"][0].items()}
    trainer.raw_model.embeddings.word_embeddings.weight.register_hook(lambda g: g * math.nan)
    trainer.train_step()
    assert all(torch.equal(before[k], v) for k, v in trainer.raw_model.state_dict().items())
    after = trainer.optimizer.state_dict()["state"][0]
    assert all(torch.equal(moments[k], after[k]) for k in moments)
    with pytest.raises(train_module.DataError, match=r"^step 2: the gradient norm is nan \(training diver"):
        trainer.check_finite()


def test_a_checkpoint_config_that_is_not_json_is_named(tiny_shards, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(run_args(tiny_shards, run, "--steps", "2")) == 0
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "lo')  # a kill in the middle of a record: dropped on resume
    assert main(run_args(tiny_shards, run, "--resume")) == 0
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()][-1] == 4
    capsys.readouterr()
    config = checkpoint.latest(run) / "config.json"
    config.write_text(config.read_text()[:100])  # cut short
    assert main(run_args(tiny_shards, run, "--steps", "6", "--resume")) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {config}: not valid JSON (") and len(err.splitlines()) == 1
    assert f"delete {config.parent} to resume from the checkpoint before it" in err
    assert ex.main([str(run), str(tmp_path / "hf")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {config}: not valid JSON (") and len(err.splitlines()) == 1


def test_an_hf_config_that_is_not_json_is_named(tmp_path, capsys):
    from trainer.import_hf import main as import_main

    config = preset("tiny", vocab_size=300, hidden_size=32, num_heads=4, max_position=64)
    ckpt = write_checkpoint(tmp_path / "ckpt", random_model(config))
    hf = ex.export(ckpt, tmp_path / "hf", write_vocab(tmp_path / "vocab", 300))
    (hf / "config.json").write_text("{")
    assert import_main([str(hf), str(tmp_path / "init")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {hf / 'config.json'}: not valid JSON (") and len(err.splitlines()) == 1


def test_resume_with_nothing_to_resume_says_so(tiny_shards, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(run_args(tiny_shards, run, "--steps", "2", "--resume")) == 0
    assert f"{run}: no checkpoint to resume from; starting at step 0" in capsys.readouterr().out


def test_resume_accepts_a_copy_of_the_shards_elsewhere(tiny_shards, tmp_path, capsys):
    """The shards are compared by content (vocab, objective, length, training shards' checksums)."""
    copy = tmp_path / "moved" / "shards"
    shutil.copytree(tiny_shards, copy)
    run = tmp_path / "run"
    assert main(run_args(tiny_shards, run, "--steps", "2")) == 0
    assert main(run_args(copy, run, "--resume")) == 0
    assert "resumed from" in capsys.readouterr().out
    assert [step for step, _ in checkpoint.list_checkpoints(run)][-1] == 4


def test_a_run_that_fails_while_setting_up_leaves_no_run_dir(tiny_shards, tmp_path, capsys, monkeypatch):
    """The run dir is made late in set-up; a failure after that (here the loader) must not leave it empty."""
    from corpusprep.errors import DataError

    def broken(*args, **kwargs):
        raise DataError("loader: cannot start")

    monkeypatch.setattr(train_module, "build_data", broken)
    run = tmp_path / "run"
    assert main(run_args(tiny_shards, run)) == 1
    assert "loader: cannot start" in capsys.readouterr().err
    assert not run.exists()
