"""The field's fine-tuning protocol: `--grid` (BERT's search, each model's configuration chosen on dev by its
median over seeds), the defaults by model size, and max_length capped at the model's positions."""

from __future__ import annotations

import json

import pytest

from tests.trainer.evaluate_helpers import stand_in_run
from tests.trainer.test_evaluate_command import args, toy  # noqa: F401 - fixtures
from trainer.evaluate import compare, finetune
from trainer.evaluate.__main__ import main
from trainer.evaluate.settings import GRID_BATCH, SIZES, EvalSettings, size_of

BEST = {"pretrained": (1e-3, 16, 10.0), "random": (6e-3, 32, 15.0)}  # where the stand-in scores peak


@pytest.fixture
def grid_runs(monkeypatch) -> list:
    """finetune.run replaced: a score that peaks at BEST[init] (and moves with the seed)."""
    calls = []

    def run(hf_dir, data, settings, init, seed):
        config = (settings.lr, settings.batch_size, settings.epochs)
        calls.append((init, seed, config))
        score = 0.9 if config == BEST[init] else 0.5 + settings.lr * 10 + settings.epochs / 100
        return stand_in_run(data, settings, score + (seed - settings.seed) / 1000)

    monkeypatch.setattr(finetune, "run", run)
    return calls


@pytest.mark.slow  # ~10 s: 72 stand-in runs, each a task with its record and predictions
def test_the_grid_chooses_each_models_configuration_on_dev(toy, grid_runs, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "grid"
    assert main(args(toy, "--grid", "--seeds", "2", "-o", str(out))) == 0
    tiny = SIZES["tiny"]
    configs = len(tiny.grid_lr) * len(GRID_BATCH) * len(tiny.grid_epochs)
    assert len(grid_runs) == configs * 2 * 2 == 72  # every configuration, seed and model
    result = json.loads((out / "evaluation.json").read_text())
    assert len(result["grid"]) == configs and result["run_count"] == 72
    def config(entry: dict) -> tuple:
        return entry["lr"], entry["batch_size"], entry["epochs"]

    assert {init: next(config(g) for g in result["grid"] if init in g["chosen"]) for init in BEST} == BEST
    for run in result["runs"]:  # the reported runs are the chosen configuration's
        assert config(run["config"]) == BEST[run["init"]]
    assert result["splits"]["dev"]["pretrained"]["median"] == pytest.approx(0.9005)
    predictions = sorted(p.name for p in (out / "predictions").iterdir())
    assert "pretrained-seed12345-dev.jsonl" in predictions and len(predictions) == 72 + 4
    assert "random-lr0.006-b32-e15-seed12346-dev.jsonl" in predictions
    assert "a grid of 18 configurations, each model's chosen on dev" in capsys.readouterr().out


def test_defaults_come_from_the_model_size_and_max_length_from_its_positions():
    base = EvalSettings(train="a", dev="b")
    settings, notes = base.resolve("tiny", 64, "accuracy", "tag")
    tiny = SIZES["tiny"]
    chosen = settings.lr, settings.epochs, settings.batch_size, settings.seeds
    assert chosen == (tiny.lr, tiny.epochs, tiny.batch_size, tiny.seeds)
    assert settings.max_length == 64 and notes == ["max_length 128 capped at 64: the model has 64 positions"]
    given, notes = EvalSettings(train="a", dev="b", lr=5e-5, max_length=32).resolve("base", 512, "f1",
                                                                                     "classify")
    assert (given.lr, given.epochs, given.max_length, given.metric, notes) == (5e-5, 3.0, 32, "f1", [])
    sentence, _ = base.resolve("tiny", 64, "matthews", "classify")  # one output per example: its own rate
    assert (sentence.lr, sentence.epochs) == (tiny.sentence_lr, tiny.epochs) and tiny.sentence_lr != tiny.lr
    assert base.resolve("tiny", 64, "f1", "qa")[0].lr == tiny.lr  # a span: an output per position
    assert EvalSettings(train="a", dev="b", lr=1e-3).resolve("tiny", 64, "f1", "regression")[0].lr == 1e-3
    grid = EvalSettings(train="a", dev="b", grid=True)
    assert {lr for lr, _, _ in grid.configs("tiny", "classify")} == set(tiny.sentence_grid_lr)
    assert {lr for lr, _, _ in grid.configs("tiny", "tag")} == set(tiny.grid_lr)
    assert [size_of(h, n) for h, n in ((128, 2), (256, 4), (512, 4), (512, 8), (768, 12), (1024, 24))] == [
        "tiny", "mini", "small", "medium", "base", "large"]
    assert compare.run_name("random", 3, (3e-5, 16, 2.0)) == "random-lr3e-05-b16-e2-seed3"
