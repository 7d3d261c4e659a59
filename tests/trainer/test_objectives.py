"""Each objective from build-pairs to a Hugging Face model: the trainer picks the head and loss from the
shards' manifest, the loss falls on CPU, and the export loads in transformers with nothing missing and the
same logits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.trainer.conftest import build_shards
from trainer.checkpoint import latest, load_checkpoint
from trainer.config import load_config
from trainer.export import export, our_model, verify
from trainer.train import train

OBJECTIVES = {  # objective: (mask strategy, the sentence-task metric it must report, or None)
    "nsp": ("token", "nsp_loss"),
    "sop": ("whole-word", "sop_loss"),
    "none": ("span", None),
}


@pytest.fixture(scope="module", params=list(OBJECTIVES))
def objective_shards(request, tmp_path_factory, demo_text) -> tuple[str, Path]:
    name = request.param
    out = tmp_path_factory.mktemp(f"shards_{name}")
    return name, build_shards(out, demo_text, max_seq_length=64, objective=name,
                              mask_strategy=OBJECTIVES[name][0])


@pytest.mark.slow  # ~21 s idle (all cases): trains and exports
def test_each_objective_trains_and_exports(objective_shards, tmp_path):
    """60 steps of the tiny model (dropout off, lr 1e-3): the mean loss of the last 10 steps is well below
    that of the first 10 (ln(2000) + ln 2 = 8.3 at the start with a sentence task, 7.6 without)."""
    name, shards = objective_shards
    assert json.loads((shards / "manifest.json").read_text())["objective"] == name
    torch.set_num_threads(1)
    run_dir = tmp_path / "run"
    overrides = [
        f'data.shards="{shards}"', f'logging.run_dir="{run_dir}"', 'device="cpu"', "schedule.steps=60",
        "data.batch_size=16", "optim.lr=1e-3", "model.dropout=0.0", "model.attention_dropout=0.0",
        "eval.every=60", "eval.max_batches=4", "checkpoint.every=60", "logging.every=1",
        f"data.dynamic_masking={'true' if name == 'none' else 'false'}",
    ]
    summary = train(load_config(None, overrides))
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if "loss" in r]
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < first - 1.0, (name, first, last)
    sentence_metric = OBJECTIVES[name][1]
    sentence_keys = {k for r in records for k in r if k.startswith(("nsp_", "sop_", "val_nsp", "val_sop"))}
    if sentence_metric is None:
        assert not sentence_keys and summary["loss"] == summary["mlm_loss"]
    else:
        assert sentence_metric in records[0] and f"val_{name}_acc" in summary
        assert all(k.split("_")[0] in (name, "val") for k in sentence_keys)

    out = export(run_dir, tmp_path / "hf")
    hf_config = json.loads((out / "config.json").read_text())
    assert hf_config["corpusprep_objective"] == name
    assert hf_config["architectures"] == ["BertForMaskedLM" if name == "none" else "BertForPreTraining"]
    config, state, _ = load_checkpoint(latest(run_dir))
    report = verify(out, our_model(config, state))
    assert report["missing_keys"] == [] and report["unexpected_keys"] == []
    assert report["mlm_max_abs_diff"] < 1e-4 and (report["nsp_max_abs_diff"] or 0.0) < 1e-4
    assert (report["nsp_max_abs_diff"] is None) == (name == "none")  # no sentence head, no such check


def test_an_mlm_only_export_imports_and_exports_back_unchanged(objective_shards, tmp_path):
    """import_hf keeps the objective our export recorded: a `none` model comes back without pooler or
    sentence head, and exporting it again gives the same weights (no fresh, random heads)."""
    from safetensors.torch import load_file

    from trainer.import_hf import import_hf

    name, shards = objective_shards
    run_dir = tmp_path / "run"
    train(load_config(None, [f'data.shards="{shards}"', f'logging.run_dir="{run_dir}"', 'device="cpu"',
                             "schedule.steps=2", "data.batch_size=8", "eval.max_batches=1"]))
    first = export(run_dir, tmp_path / "hf")
    record = import_hf(first, tmp_path / "imported")
    assert record["model"]["objective"] == name and record["source"]["initialized_fresh"] == []
    again = export(tmp_path / "imported", tmp_path / "hf2")
    before, after = load_file(first / "model.safetensors"), load_file(again / "model.safetensors")
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert json.loads((again / "config.json").read_text())["corpusprep_objective"] == name
