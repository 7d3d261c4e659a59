"""A checkpoint whose state and settings pass the records' schemas but could not have been written by a run
(hostile-user trial, ADV-22 items 1-3): a data position no run reaches, optimizer state that would crash or
silently change the update, saved settings of 1e400 or null, a model config.json that does not describe the
weights or claims 10^8 layers. Every entry point that reads it (resume, --init-from, export, validate) ends
in one line naming the file and the field, by the same checks (trainer.checkpoint), and never hangs."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.security.test_fuzz_records import alarm
from tests.security.trust_world import copy, corpusprep, train_args, trainer_export, trainer_run
from trainer import checkpoint_checks
from trainer.model import BertConfig, BertForPreTraining

STEP = Path("checkpoints/step-0000002")



def covered(run: Path, name: str) -> None:
    """`name`'s new size and sha256 into the checkpoint's config.json: an attacker covering tracks."""
    step = run / STEP
    record = json.loads((step / "config.json").read_text())
    data = (step / name).read_bytes()
    record["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (step / "config.json").write_text(json.dumps(record))


def edit_json(run: Path, name: str, change) -> None:
    path = run / STEP / name
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    if name != "config.json":
        covered(run, name)


def edit_tensors(run: Path, change) -> None:
    path = run / STEP / "trainer.safetensors"
    tensors = load_file(str(path))
    change(tensors)
    save_file(tensors, str(path))
    covered(run, "trainer.safetensors")


def every_group(key, value):
    def change(record):
        for group in record["optimizer"]["param_groups"]:
            group[key] = value

    return lambda run: edit_json(run, "trainer.json", change)


def every_step(value):
    def change(tensors):
        for name in [n for n in tensors if n.endswith(".step")]:
            tensors[name] = value.clone()

    return lambda run: edit_tensors(run, change)


def train_setting(section, values):
    return lambda run: edit_json(run, "config.json", lambda r: r["train"][section].update(values))


BOOL_STEP = {"optimizer.state.0.step": torch.tensor(True)}

# damage -> what the one line names
STATE = {
    "examples": (lambda run: edit_json(run, "trainer.json", lambda r: r["data"].update(examples=10**17)),
                 "trainer.json: data: epoch 0, examples 100000000000000000"),
    "epoch": (lambda run: edit_json(run, "trainer.json", lambda r: r["data"].update(epoch=2**62)),
              "trainer.json: data: epoch 4611686018427387904, examples"),
    "bool-step": (lambda run: edit_tensors(run, lambda t: t.update(BOOL_STEP)),
                  "trainer.json: optimizer.state.0.step: a torch.bool tensor"),
    "negative-step": (every_step(torch.tensor(-1.0)),
                      "optimizer.state.0.step: a torch.float32 tensor of shape () (-1.0)"),
    "nan-moment": (lambda run: edit_tensors(run, lambda t: t["optimizer.state.0.exp_avg"].fill_(math.nan)),
                   "optimizer.state.0.exp_avg: holds values not finite"),
    "betas": (every_group("betas", [1.0, 1.0]),
              "optimizer.param_groups[0].betas: [1.0, 1.0], not [0.9, 0.999]"),
    "amsgrad": (every_group("amsgrad", True), "optimizer.param_groups[0].amsgrad: True, not False"),
    "eps": (every_group("eps", -1.0), "optimizer.param_groups[0].eps: -1.0, not 1e-06"),
    "lr": (every_group("lr", math.inf), "optimizer.param_groups[0].lr: inf, not a finite learning rate"),
    "steps": (train_setting("schedule", {"warmup_steps": None, "steps": math.inf}),
              "config.json: train.schedule.steps: expected an integer, got inf"),
    "null": (train_setting("data", {"chunk_rows": None}),
             "config.json: train.data.chunk_rows: expected int, got None"),
}


@pytest.mark.parametrize("damage", sorted(STATE))
def test_trainer_state_the_run_could_not_have_written_is_one_line_for_resume_and_validate(outputs, tmp_path,
                                                                                         damage):
    change, named = STATE[damage]
    run = copy(outputs.run, tmp_path / "run")
    change(run)
    with alarm(120, f"resume on {damage}"):  # a position of 10^17 rows was fast-forwarded for hours
        resumed = trainer_run(*train_args(outputs.shards, run, 4), "--resume")
    assert resumed.code == 1 and named in resumed.line, resumed.err[-2000:]
    checked = corpusprep("validate", run)
    assert checked.code == 1 and "INVALID" in checked.line and named in checked.err, checked.err


def test_how_the_update_runs_is_this_machines_and_a_resume_goes_on(outputs, tmp_path):
    """foreach / capturable / fused say how the update is computed, not what: a GPU's checkpoint resumes on a
    CPU, and `capturable: true` (an AssertionError on a CPU when loaded as saved) is replaced by this
    machine's setting."""
    run = copy(outputs.run, tmp_path / "run")
    every_group("capturable", True)(run)
    every_group("foreach", True)(run)
    assert corpusprep("validate", run).code == 0
    resumed = trainer_run(*train_args(outputs.shards, run, 3), "--resume")
    assert resumed.code == 0, resumed.err[-2000:]


MODEL = {
    # ADV-22's: the size check refuses it before anything is built (it hung building a meta model)
    "huge": ({"num_layers": 10**10, "hidden_size": 2, "num_heads": 1, "intermediate_size": 2},
             "config.json: model"),
    # within check_fits here (~4e9 parameters): the weights' header refuses it, and no model of 20,000
    # layers is built first, not even on the meta device (trainer.checkpoint_checks.weight_shapes)
    "layers": ({"num_layers": 20_000}, "weights.safetensors: missing layers.2.attn.qkv.weight"),
    "hidden": ({"hidden_size": 64}, "weights.safetensors: wrong shape of embeddings.word_embeddings.weight"),
}


@pytest.mark.parametrize("damage", sorted(MODEL))
def test_a_model_config_that_does_not_describe_the_weights_is_one_line_everywhere(outputs, tmp_path, damage):
    values, named = MODEL[damage]
    run = copy(outputs.run, tmp_path / "run")
    edit_json(run, "config.json", lambda r: r["model"].update(values))
    with alarm(120, f"{damage}: export, --init-from, validate"):
        exported = trainer_export(run, tmp_path / "hf", "--vocab", outputs.vocab)
        started = trainer_run(*train_args(outputs.shards, tmp_path / "next", 1), "--init-from", run)
        checked = corpusprep("validate", run)
    for result in (exported, started):
        assert result.code == 1 and named in result.line, result.err[-2000:]
    assert checked.code == 1 and named in checked.err, checked.err
    assert not (tmp_path / "hf").exists() and not (tmp_path / "next").exists()


@pytest.mark.parametrize("objective", ["nsp", "none"])
@pytest.mark.parametrize("pre_ln", [False, True])
def test_weight_shapes_are_the_models_own(objective, pre_ln):
    """The shapes a config implies, from a one-layer model, are those of the whole model, in order."""
    config = BertConfig(vocab_size=50, hidden_size=8, num_layers=3, num_heads=2, max_position=16,
                        pre_ln=pre_ln, objective=objective)
    with torch.device("meta"):
        model = BertForPreTraining(config).state_dict()
    assert list(checkpoint_checks.weight_shapes(config)) == [(k, tuple(v.shape)) for k, v in model.items()]
