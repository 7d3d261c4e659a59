"""The batch-size ramp (schedule.batch_ramp_fraction, batch_ramp_start): a step takes fewer of its grad_accum
micro-batches early in the run, rising linearly to all of them, in whole micro-batches; each step's gradient
is the mean over the micro-batches it took; checked up front where it cannot ramp. A resume in the middle of
the ramp: tests/trainer/test_train.py (test_resumed_run_equals_uninterrupted_run); under DDP: the two-rank
torchrun test there."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest
import torch

from corpusprep.errors import UsageError
from tests.trainer.test_train import small_run
from trainer import checkpoint
from trainer.config import ScheduleConfig, load_config
from trainer.dist import Dist
from trainer.optim import micro_batches
from trainer.resume import resume_conflicts
from trainer.train import Trainer, train


def test_micro_batches_follow_the_ramp_in_whole_micro_batches():
    """4 micro-batches ramped over the first half of the run from a quarter: 1 at the start, then
    ceil(4 x (0.25 + 0.75 x progress / 0.5)), all 4 from half-way on; off, always grad_accum. Against exact
    rational arithmetic for random settings (10 x 0.3 is 3.0000000000000004 in floating point: 3, not 4)."""
    ramp = ScheduleConfig(steps=10, grad_accum=4, batch_ramp_fraction=0.5, batch_ramp_start=0.25)
    assert [micro_batches(step / 10, ramp) for step in range(10)] == [1, 2, 3, 3, 4, 4, 4, 4, 4, 4]
    tenths = ScheduleConfig(grad_accum=10, batch_ramp_fraction=0.2, batch_ramp_start=0.3)
    assert micro_batches(0.0, tenths) == 3
    assert {micro_batches(p / 7, ScheduleConfig(grad_accum=3)) for p in range(8)} == {3}
    draw = random.Random(0)
    for _ in range(2000):
        accum, start, fraction = draw.randint(1, 64), draw.randint(1, 20) / 20, draw.randint(1, 20) / 20
        if accum * start < 1:
            continue
        progress = draw.randint(0, 100) / 100
        schedule = ScheduleConfig(grad_accum=accum, batch_ramp_fraction=fraction, batch_ramp_start=start)
        # the settings as written (decimals): an exact value that is not whole lies >= 1/40,000 from one
        low, part = Fraction(str(start)), min(Fraction(1), Fraction(str(progress)) / Fraction(str(fraction)))
        exact = max(1, math.ceil(accum * (low + (1 - low) * part)))
        assert micro_batches(progress, schedule) == exact, (accum, start, fraction, progress)


@pytest.mark.parametrize("settings, message", [
    ({"grad_accum": 2, "batch_ramp_fraction": 0.3},
     "schedule.batch_ramp_start=0.25 of grad_accum=2 is less than one micro-batch"),
    ({"grad_accum": 4, "batch_ramp_fraction": 1.5},
     "schedule.batch_ramp_fraction=1.5 must be in [0, 1] (0: no ramp)"),
    ({"grad_accum": 4, "batch_ramp_fraction": 0.5, "batch_ramp_start": 0},
     "batch_ramp_start=0.0 must be in (0, 1]"),
])
def test_a_ramp_that_cannot_be_is_one_line(settings, message):
    with pytest.raises(UsageError, match="^config: ") as refused:
        load_config({"schedule": settings})
    assert message in str(refused.value)
    off = load_config({"schedule": {"grad_accum": 2, "batch_ramp_start": 0.1}})  # no ramp: any start
    assert off.schedule.batch_ramp_fraction == 0


def test_a_resume_keeps_the_ramp():
    ramp = {"steps": 10, "grad_accum": 4, "batch_ramp_fraction": 0.5}
    assert resume_conflicts({"schedule": ramp}, {"schedule": ramp | {"steps": 20}}) == []
    assert resume_conflicts({"schedule": ramp}, {"schedule": ramp | {"batch_ramp_fraction": 0.2}}) == [
        "schedule.batch_ramp_fraction: 0.5 -> 0.2"]


def test_each_step_takes_the_ramps_batch(tiny_shards, tmp_path):
    """Steps of 1, 2, 3, 3, 4... micro-batches of 4 sequences: in the metrics (seqs_per_step, every step)
    and in the data position, which counts exactly the examples read (33 micro-batches of 4)."""
    run = tmp_path / "run"
    ramp = ["schedule.steps=10", "schedule.grad_accum=4", "schedule.batch_ramp_fraction=0.5",
            "data.batch_size=4", "eval.every=0", "checkpoint.every=10"]
    train(load_config(None, small_run(tiny_shards, run, *ramp)))
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    per_step = [r["seqs_per_step"] for r in records if "seqs_per_step" in r]
    assert per_step == [4.0 * m for m in (1, 2, 3, 3, 4, 4, 4, 4, 4, 4)]
    assert checkpoint.load(checkpoint.latest(run), "trainer")["data"] == {"epoch": 0, "examples": 33 * 4}


def test_a_ramped_step_is_the_mean_over_the_micro_batches_it_took(tiny_shards, tmp_path):
    """The first step of a ramp from half of 4 micro-batches takes 2, and scales the loss by 2, not 4: it is
    bit for bit the first step of a run of 2 micro-batches without a ramp (the same examples, loss,
    weights)."""
    torch.set_num_threads(1)
    common = ["schedule.steps=4", "data.batch_size=4"]
    ramp = ["schedule.grad_accum=4", "schedule.batch_ramp_fraction=1.0", "schedule.batch_ramp_start=0.5"]
    configs = [load_config(None, small_run(tiny_shards, tmp_path / name, *common, *extra))
               for name, extra in (("ramp", ramp), ("plain", ["schedule.grad_accum=2"]))]
    ramped = Trainer(configs[0], Dist(), torch.device("cpu"))
    got = ramped.train_step()  # before the next trainer seeds the global RNG, which dropout draws from
    plain = Trainer(configs[1], Dist(), torch.device("cpu"))
    want = plain.train_step()
    assert ramped.position == plain.position and ramped.position.examples == 2 * 4
    assert float(got["loss"]) == float(want["loss"]) and float(got["grad_norm"]) == float(want["grad_norm"])
    theirs = plain.raw_model.state_dict()
    assert all(torch.equal(v, theirs[k]) for k, v in ramped.raw_model.state_dict().items())
