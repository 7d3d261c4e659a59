"""The learning-rate schedule: BERT's triangle by default, warm-up-stable-decay (trapezoidal) with
`schedule.decay_fraction` in each decay shape, by steps and by budget; and the schedule's settings bounded to
what a run can honour."""

from __future__ import annotations

import math

import pytest
import torch

from corpusprep.errors import UsageError
from trainer.config import DECAY_SHAPES, MAX_STEPS, ScheduleConfig, load_config
from trainer.optim import budget_factor, build_scheduler


def lrs(schedule: ScheduleConfig, steps: int, progress=None) -> list[float]:
    """The lr of each of `steps` optimizer steps (peak 1.0), as the trainer's scheduler gives them."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    scheduler = build_scheduler(optimizer, schedule, progress)
    out = []
    for _ in range(steps):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


def test_the_default_is_berts_triangle_by_steps_and_by_budget():
    """No decay_fraction: linear warm-up, then linear decay over all the rest, the formula the trainer had
    before warm-up-stable-decay existed (so a run of an earlier config gets the lr it got)."""
    steps, warmup = 200, 20
    got = lrs(ScheduleConfig(steps=steps, warmup_steps=warmup), steps)
    before = [(s + 1) / warmup if s < warmup else (steps - s) / (steps - warmup) for s in range(steps)]
    assert got == pytest.approx(before, abs=1e-12)
    shares = [i / 100 for i in range(101)]
    triangle = [p / 0.1 if p < 0.1 else (1 - p) / 0.9 for p in shares]
    assert [budget_factor(p, 0.1) for p in shares] == pytest.approx(triangle, abs=1e-12)


@pytest.mark.parametrize("shape", list(DECAY_SHAPES))
def test_warm_up_stable_decay_by_steps(shape):
    """decay_fraction 0.2 of 1,000 steps: the peak from the end of the warm-up (100 steps) to step 800, then
    down to 0 in the shape asked: half-way through the decay the lr is the shape's value at 1/2 (linear 0.5,
    cosine 0.5, 1-sqrt 0.29), and it never rises."""
    got = lrs(ScheduleConfig(steps=1000, decay_fraction=0.2, decay_shape=shape), 1001)
    assert got[99] == pytest.approx(1.0) and all(lr == pytest.approx(1.0) for lr in got[100:801])
    assert got[900] == pytest.approx(DECAY_SHAPES[shape](0.5)) and got[1000] == 0.0
    assert all(later <= earlier + 1e-12 for earlier, later in zip(got[100:], got[101:], strict=False))
    half = {"linear": 0.5, "cosine": 0.5, "1-sqrt": 1 - math.sqrt(0.5)}
    assert got[900] == pytest.approx(half[shape])
    assert 0 < got[999] < got[990] < got[950]


@pytest.mark.parametrize("shape", list(DECAY_SHAPES))
def test_warm_up_stable_decay_by_budget(shape):
    """The same shapes over a budget's elapsed share: warm-up over 10%, the peak until 75%, 0 at 100%."""
    clock = {"p": 0.0}
    schedule = ScheduleConfig(budget="1h", warmup_fraction=0.1, decay_fraction=0.25, decay_shape=shape)
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=2.0)
    scheduler = build_scheduler(optimizer, schedule, lambda: clock["p"])
    seen = {}
    for p in (0.05, 0.1, 0.5, 0.75, 0.875, 1.0):
        clock["p"] = p
        optimizer.step()
        scheduler.step()
        seen[p] = optimizer.param_groups[0]["lr"] / 2.0
    assert seen[0.05] == pytest.approx(0.5) and seen[0.1] == seen[0.5] == seen[0.75] == pytest.approx(1.0)
    assert seen[0.875] == pytest.approx(DECAY_SHAPES[shape](0.5)) and seen[1.0] == 0.0


@pytest.mark.parametrize("settings, message", [
    ({"steps": 100, "decay_fraction": 0.95},
     "schedule: a warm-up of 10 steps and a decay of 95 (decay_fraction=0.95) must fit in steps=100"),
    ({"budget": "1h", "warmup_fraction": 0.3, "decay_fraction": 0.8},
     "schedule.warmup_fraction=0.3 + decay_fraction=0.8 must be at most 1 (the whole budget)"),
    ({"decay_fraction": 0}, "schedule.decay_fraction=0.0 must be in (0, 1]"),
    ({"decay_shape": "exp"}, "schedule.decay_shape='exp' must be one of linear, cosine, 1-sqrt"),
    # issue 39: a budget no run reaches left the lr at 3e-24 at step 2,000; the longest a schedule honours
    ({"budget": "99999999999999999999h"},
     "schedule.budget: '99999999999999999999h' is more than a year (8784h), longer than any run"),
    ({"budget": "9" * 400 + "h"}, "is more than a year"),  # float: inf
    ({"steps": MAX_STEPS + 1}, "schedule.steps=1000000001 must be an integer from 1 to 1,000,000,000"),
    ({"grad_accum": 2**40}, "schedule.grad_accum=1099511627776 must be an integer from 1 to 1048576"),
])
def test_schedule_settings_out_of_range_are_one_line(settings, message):
    with pytest.raises(UsageError, match="^config: ") as refused:
        load_config({"schedule": settings})
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_longest_honoured_run_is_accepted():
    assert load_config({"schedule": {"budget": "8784h"}}).schedule.budget_seconds == 8784 * 3600
    assert load_config({"schedule": {"steps": MAX_STEPS}}).schedule.max_steps == MAX_STEPS
    with pytest.raises(UsageError, match="checkpoint.every_time: '9000h' is more than a year"):
        load_config({"checkpoint": {"every_time": "9000h"}})
