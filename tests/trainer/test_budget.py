"""Budgeted training (`--budget 15m`): the schedule follows the elapsed share of the training time, the
run checkpoints on time and stops when the budget is spent; evaluation is not counted; a resume continues
the same time schedule. Time comes from an injected clock: no test sleeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpusprep.errors import UsageError
from tests.trainer.test_train import assert_clean_exit, small_run, torchrun
from trainer import checkpoint
from trainer.config import load_config, parse_duration
from trainer.optim import budget_factor
from trainer.run import main as run_main
from trainer.train import Trainer, train

TICK = 2.0  # fake seconds a training step takes
EVAL_SECONDS = 100.0  # fake seconds an evaluation takes: never counted against the budget


class FakeClock:
    """Advances TICK on every read: the trainer reads it as a step starts and as it ends, so each training
    step takes TICK (and so does the time between steps, which is not counted); `advance` stands for time
    spent elsewhere (evaluation)."""

    def __init__(self, start: float = 0.0, fail_after: int | None = None):
        self.now, self.reads, self.fail_after = start, 0, fail_after

    def __call__(self) -> float:
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise KeyboardInterrupt  # the run is killed here
        self.now += TICK
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def slow_evaluation(monkeypatch):
    """Every evaluation costs EVAL_SECONDS of the clock the trainer was given."""
    real = Trainer.evaluate

    def evaluate(self):
        self.clock.advance(EVAL_SECONDS)
        return real(self)

    monkeypatch.setattr(Trainer, "evaluate", evaluate)


def budget_run(shards: Path, run_dir: Path, *extra: str) -> list[str]:
    """small_run by time: no step count, warm-up as a share (5 fake steps of a 30 s budget: 3 s)."""
    args = [a for a in small_run(shards, run_dir) if not a.startswith(("schedule.steps", "schedule.warmup"))]
    return [*args, 'schedule.budget="30s"', "schedule.warmup_fraction=0.1", "eval.every=5", *extra]


def records(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if "loss" in r]


def expected_lrs(steps: int, peak: float = 1e-3, budget: float = 30.0, max_steps: int | None = None) -> list:
    """The lr of each step: the factor at the progress the previous step ended at."""
    progress = [max(TICK * k / budget, k / max_steps if max_steps else 0) for k in range(steps)]
    return [peak * budget_factor(p, 0.1) for p in progress]


def test_durations_parse_and_bad_ones_are_one_line():
    assert [parse_duration(t) for t in ("90s", "15m", "2h", "1h30m", "1.5h", "2H 5M")] == [
        90, 900, 7200, 5400, 5400, 7500]
    for bad in ("", "15", "m", "15x", "1h-5m", "h15"):
        with pytest.raises(ValueError, match="not a duration like 90s, 15m, 2h or 1h30m"):
            parse_duration(bad)
    with pytest.raises(UsageError, match=r"^config: schedule.budget: '900' is not a duration"):
        load_config(None, ["schedule.budget=900"])
    with pytest.raises(UsageError, match=r"checkpoint.every_time: '0m' is no time at all"):
        load_config(None, ['checkpoint.every_time="0m"'])
    with pytest.raises(UsageError, match="set schedule.warmup_fraction instead"):
        load_config(None, ['schedule.budget="1h"', "schedule.warmup_steps=10"])
    # without a budget, 1000 steps as before; with one, no step limit unless steps are given
    assert load_config(None, []).schedule.max_steps == 1000
    assert load_config(None, ['schedule.budget="1h"']).schedule.max_steps is None
    assert load_config(None, ['schedule.budget="1h"', "schedule.steps=50"]).schedule.max_steps == 50


def test_the_lr_follows_the_elapsed_share_of_the_budget():
    assert [budget_factor(p, 0.1) for p in (0, 0.05, 0.1, 0.55, 1.0, 1.2)] == pytest.approx(
        [0, 0.5, 1, 0.5, 0, 0])


@pytest.mark.slow  # ~2.8 s idle
def test_a_budgeted_run_stops_on_time_and_evaluation_is_not_counted(tiny_shards, tmp_path, slow_evaluation):
    clock = FakeClock()
    summary = train(load_config(None, budget_run(tiny_shards, tmp_path)), clock)
    # 30 s at 2 s a step: 15 steps, though the evaluations at steps 5, 10, 15 took 300 s of the clock
    assert summary["steps"] == 15 and summary["train_seconds"] == pytest.approx(30)
    rows = records(tmp_path)
    assert [r["step"] for r in rows] == list(range(1, 16))
    assert [r["lr"] for r in rows] == pytest.approx(expected_lrs(15))
    assert [r["train_seconds"] for r in rows] == pytest.approx([TICK * k for k in range(1, 16)])
    validations = [r["step"] for r in map(json.loads, (tmp_path / "metrics.jsonl").read_text().splitlines())
                   if "val_mlm_acc" in r]
    assert validations == [5, 10, 15]
    assert [s for s, _ in checkpoint.list_checkpoints(tmp_path)][-1] == 15  # the final checkpoint
    # a rerun finds it finished: nothing to do
    assert train(load_config(None, budget_run(tiny_shards, tmp_path)), FakeClock())["status"] == "done"


@pytest.mark.slow  # trains a model (the tiny_shards fixture ~9 s)
def test_steps_and_budget_whichever_ends_first_and_the_lr_reaches_zero_there(tiny_shards, tmp_path):
    steps_first = train(load_config(None, budget_run(tiny_shards, tmp_path / "a", "schedule.steps=10")),
                        FakeClock())
    assert steps_first["steps"] == 10  # 10 steps are 20 s of the 30 s
    assert [r["lr"] for r in records(tmp_path / "a")] == pytest.approx(expected_lrs(10, max_steps=10))
    time_first = train(load_config(None, budget_run(tiny_shards, tmp_path / "b", "schedule.steps=100")),
                       FakeClock())
    assert time_first["steps"] == 15


@pytest.mark.slow  # trains a model (the tiny_shards fixture ~9 s)
def test_checkpoints_on_time_as_well_as_steps(tiny_shards, tmp_path):
    extra = ['checkpoint.every_time="5s"', "checkpoint.every=7", "checkpoint.keep=100"]
    train(load_config(None, budget_run(tiny_shards, tmp_path, *extra)), FakeClock())
    # every 5 s of training (steps end at 2, 4, 6, ... s: 5 passes at step 3, 10 at 5, 15 at 8, ...),
    # every 7 steps, and the last
    assert [s for s, _ in checkpoint.list_checkpoints(tmp_path)] == [3, 5, 7, 8, 10, 13, 14, 15]


@pytest.mark.slow  # trains a model (the tiny_shards fixture ~9 s)
def test_a_resumed_budgeted_run_continues_the_same_time_schedule(tiny_shards, tmp_path):
    whole = tmp_path / "whole"
    train(load_config(None, budget_run(tiny_shards, whole)), FakeClock())
    cut = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt):  # killed in step 8, after the step-4 checkpoint
        train(load_config(None, budget_run(tiny_shards, cut)), FakeClock(fail_after=15))
    assert [s for s, _ in checkpoint.list_checkpoints(cut)] == [4]
    # resumed much later by the wall clock: the schedule goes by the saved 8 s of training
    resumed = train(load_config(None, budget_run(tiny_shards, cut, "checkpoint.resume=true")),
                    FakeClock(start=1e6))
    assert resumed["steps"] == 15 and resumed["train_seconds"] == pytest.approx(30)
    # with a clock that repeats itself, the resumed run is the uninterrupted one, loss for loss (a real
    # clock never repeats: a budgeted run is not bitwise reproducible)
    same = [(r["step"], r["lr"], r["loss"]) for r in records(cut)]
    assert same == [(r["step"], r["lr"], r["loss"]) for r in records(whole)]


@pytest.mark.slow  # trains a model (the tiny_shards fixture ~9 s)
def test_the_budget_flag(tiny_shards, capsys):
    assert run_main(["--shards", str(tiny_shards), "--budget", "2h", "--print-config"]) == 0
    schedule = json.loads(capsys.readouterr().out)["schedule"]
    assert schedule["budget"] == "2h" and schedule["steps"] is None
    assert run_main(["--shards", str(tiny_shards), "--budget", "2 hours", "--print-config"]) == 2
    assert "schedule.budget: '2 hours' is not a duration" in capsys.readouterr().err


@pytest.mark.slow  # two torchrun ranks start in ~20 s on a quiet machine
def test_torchrun_ranks_follow_one_clock(tiny_shards, tmp_path):
    """Two ranks measure different times; they take the slowest one's, so they stop at the same step with
    the same learning rates (different lrs would leave different weights) and the same recorded time."""
    run_dir = tmp_path / "ddp"
    assert_clean_exit(torchrun(*budget_run(tiny_shards, run_dir, 'schedule.budget="4s"', "eval.every=0")))
    summaries = [json.loads((run_dir / f"summary-rank{r}.json").read_text()) for r in range(2)]
    assert summaries[0]["weights_sha256"] == summaries[1]["weights_sha256"]
    assert summaries[0]["steps"] == summaries[1]["steps"] >= 2
    assert summaries[0]["train_seconds"] == summaries[1]["train_seconds"] >= 4
