"""Training a finished run longer: `--resume` with larger limits (schedule.steps, schedule.budget) continues
from the newest checkpoint, and from there the learning rate is the one the schedule of the new limits gives
at each step, as if the run had been started with them (docs/manual/training.md); the warm-up settings a
resume must keep are compared as the warm-up they gave the run, not the one they would give new limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trainer.test_budget import TICK, FakeClock, budget_run, expected_lrs
from tests.trainer.test_schedule import lrs
from tests.trainer.test_train import small_run
from trainer.config import load_config
from trainer.resume import resume_conflicts
from trainer.train import train

PEAK = 1e-3  # small_run's optim.lr


def logged(run_dir: Path) -> dict[int, float]:
    """step -> the lr that step trained with (metrics.jsonl, a record every step)."""
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["lr"] for r in lines if "lr" in r}


def test_the_warm_up_compared_is_the_one_the_run_had():
    """issue 39: more steps with the default warm-up (10% of the steps) or the same warmup_fraction conflict
    with nothing; a warm-up other than the run had does, said once with what each side gives."""
    default = {"schedule": {"steps": 20}}
    assert resume_conflicts(default, {"schedule": {"steps": 40}}) == []
    assert resume_conflicts(default, {"schedule": {"steps": 20, "warmup_steps": 2}}) == []  # the same, said
    assert resume_conflicts(default, {"schedule": {"steps": 40, "warmup_steps": 2}}) == []  # kept by hand
    assert resume_conflicts(default, {"schedule": {"steps": 20, "warmup_steps": 3}}) == [
        "schedule warm-up: 2 steps of 20 (the default) -> 3 steps of 20 (schedule.warmup_steps=3)"]
    share = {"schedule": {"steps": 20, "warmup_fraction": 0.25}}
    assert resume_conflicts(share, {"schedule": {"steps": 60, "warmup_fraction": 0.25}}) == []
    assert resume_conflicts(share, {"schedule": {"steps": 60}}) == [
        "schedule warm-up: 5 steps of 20 (schedule.warmup_fraction=0.25) -> 2 steps of 20 (the default)"]
    budget = {"schedule": {"budget": "15m"}}
    assert resume_conflicts(budget, {"schedule": {"budget": "30m", "warmup_fraction": 0.1}}) == []
    assert resume_conflicts(budget, {"schedule": {"budget": "30m", "warmup_fraction": 0.2}}) == [
        "schedule warm-up: 0.1 of the budget (the default) -> 0.2 of the budget "
        "(schedule.warmup_fraction=0.2)"]
    wsd = {"steps": 20, "decay_fraction": 0.2, "decay_shape": "linear"}
    assert resume_conflicts({"schedule": wsd}, {"schedule": wsd | {"steps": 40}}) == []
    assert resume_conflicts({"schedule": wsd}, {"schedule": wsd | {"decay_fraction": 0.3}}) == [
        "schedule.decay_fraction: 0.2 -> 0.3"]  # a resume keeps the decay (a continuation: as a share)


@pytest.mark.slow  # ~1-2 s a case: trains 6 steps, then 10 more
@pytest.mark.parametrize("extra", [
    (),  # BERT's triangle, the default warm-up: 1 step of 6, 2 of 16
    ("schedule.warmup_fraction=0.2", "schedule.decay_fraction=0.5", 'schedule.decay_shape="1-sqrt"'),  # WSD
])
def test_a_finished_run_continues_on_the_new_limits_schedule(tiny_shards, tmp_path, capsys, extra):
    """A 6-step run, then --resume with 16 steps: steps 7 to 16 train at the lrs a 16-step run has there
    (the first of them too: not the finished run's last lr, 0), after one line saying so."""
    run = tmp_path / "run"
    args = [a for a in small_run(tiny_shards, run, "eval.every=0") if not a.startswith("schedule.warmup")]
    first = train(load_config(None, [*args, "schedule.steps=6", *extra]))
    assert first["steps"] == 6 and logged(run)[6] > 0
    capsys.readouterr()
    more = load_config(None, [*args, "schedule.steps=16", "checkpoint.resume=true", *extra])
    assert train(more)["steps"] == 16
    said = capsys.readouterr().out
    assert ("step-0000006: the run finished there (schedule.steps 6); it continues to schedule.steps 16, at "
            "the learning rates of the new limits' schedule from step 6 on") in said
    wanted = [PEAK * lr for lr in lrs(more.schedule, 16)]  # the schedule of a 16-step run, peak PEAK
    got = logged(run)
    assert sorted(got) == list(range(1, 17))  # the first run's records, then the continuation's
    assert [got[s] for s in range(7, 17)] == pytest.approx(wanted[6:], rel=1e-12, abs=0)
    assert got[7] > 0.1 * PEAK
    assert train(more)["status"] == "done"  # finished again: a rerun does nothing


@pytest.mark.slow  # ~1.7 s: 15 steps, then 15 more
def test_a_finished_budgeted_run_continues_on_the_new_budgets_schedule(tiny_shards, tmp_path):
    """30 s of training (15 fake steps), then --resume with 60 s: 15 more steps, at the lrs of a 60 s run at
    the same progress (half-way: (1 - 0.5) / 0.9 of the peak for the first), never the saved 0."""
    run = tmp_path / "run"
    train(load_config(None, budget_run(tiny_shards, run, "eval.every=0")), clock=FakeClock())
    assert logged(run)[15] > 0 and max(logged(run)) == 15
    more = budget_run(tiny_shards, run, "eval.every=0", 'schedule.budget="60s"', "checkpoint.resume=true")
    done = train(load_config(None, more), clock=FakeClock())
    assert done["steps"] == 30 and done["train_seconds"] == pytest.approx(30 * TICK)
    got = logged(run)
    assert [got[s] for s in range(16, 31)] == pytest.approx(expected_lrs(30, budget=60.0)[15:], rel=1e-9)
    assert got[16] == pytest.approx(PEAK * 0.5 / 0.9)
