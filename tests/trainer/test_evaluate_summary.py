"""The verdict: a paired comparison by seed, a 95% interval, and words a user reads."""

from __future__ import annotations

import math

import pytest

from trainer.evaluate.summary import compare, cost_line, run_warnings, t_975, warnings


def test_a_gain_larger_than_seed_noise_helps_and_says_by_how_much():
    result = compare([0.905, 0.902, 0.908], [0.874, 0.872, 0.876])
    assert result["outcome"] == "helps"
    assert result["gain"]["scores"] == pytest.approx([0.031, 0.030, 0.032])
    assert result["verdict"].startswith("pre-training helps: +0.031 ± 0.001 accuracy over 3 seeds (95% ")
    low, high = result["gain"]["interval"]
    assert low == pytest.approx(0.031 - 4.303 * 0.001 / math.sqrt(3), abs=1e-6) and 0 < low < 0.031 < high


def test_the_gain_is_paired_by_seed():
    # the two models move together from seed to seed: large spreads, a steady gain
    pre, rand = [0.80, 0.90, 0.70], [0.79, 0.89, 0.69]
    assert compare(pre, rand)["outcome"] == "helps"
    # the same numbers unpaired (shuffled) give gains that do not agree on a sign
    assert compare(pre, [0.89, 0.69, 0.79])["outcome"] == "no_gain"


def test_noise_a_loss_and_one_seed():
    noisy = compare([0.90, 0.88, 0.91], [0.89, 0.90, 0.88])
    assert noisy["outcome"] == "no_gain" and noisy["verdict"].startswith("no gain beyond seed noise: +0.007")
    worse = compare([0.80, 0.81, 0.80], [0.85, 0.85, 0.86])
    assert worse["outcome"] == "hurts" and worse["verdict"].startswith("pre-training hurts: -0.050")
    single = compare([0.9], [0.8])
    assert single["outcome"] == "unknown" and single["gain"]["std"] is None
    assert single["verdict"] == ("one seed: gain +0.100 accuracy; run 2 or more seeds (--seeds) to tell it "
                                 "from seed noise")
    same = compare([0.9, 0.9], [0.9, 0.9])  # identical runs: no spread and no gain
    assert same["outcome"] == "no_gain"


def test_t_quantiles():
    assert t_975(2) == 4.303 and t_975(11) == 2.228  # between rows: the smaller df, the wider interval
    assert t_975(100) == pytest.approx(1.984, abs=0.001)


def test_a_model_that_does_not_beat_the_baseline_is_a_warning():
    result = compare([0.86, 0.87], [0.84, 0.85])
    found = warnings(result, 0.866, "most frequent tag per word")
    assert len(found) == 2 and found[0].startswith("the pre-trained model (0.8650) does not beat the most")
    assert warnings(result, 0.5, "majority class") == []


def test_cost_lines():
    assert cost_line({"known": True, "steps": 1500, "examples": 48000, "tokens": 2_900_000, "seconds": 186.0,
                      "note": "one process"}) == (
        "pre-training cost: 1,500 steps, 48,000 sequences, 2.9M tokens, 3.1 min of training (one process)")
    assert cost_line({"known": False, "note": "an imported model"}) == "pre-training cost: an imported model"


def test_gains_that_agree_in_sign_are_never_called_seed_noise():
    """Issue 39: three negative gains whose 95% interval still includes 0 were "no gain beyond seed noise"."""
    lower = compare([0.80, 0.85, 0.79], [0.81, 0.852, 0.82])
    assert lower["outcome"] == "no_gain" and "seed noise" not in lower["verdict"]
    assert lower["verdict"].startswith("not established: every seed lower with pre-training, -0.014 ± 0.014")
    assert "includes 0; run more seeds" in lower["verdict"]
    higher = compare([0.81, 0.852, 0.82], [0.80, 0.85, 0.79])
    assert higher["verdict"].startswith("not established: every seed higher")
    mixed = compare([0.90, 0.88, 0.91], [0.89, 0.90, 0.88])
    assert "the seeds disagree on its sign" in mixed["verdict"]


def test_the_median_and_the_spread_are_reported():
    result = compare([0.70, 0.90, 0.80, 0.10, 0.85], [0.1] * 5)
    assert result["pretrained"]["median"] == 0.80 and result["pretrained"]["min"] == 0.10
    assert result["pretrained"]["max"] == 0.90 and result["pretrained"]["mean"] == pytest.approx(0.67)


def test_a_run_that_collapsed_or_diverged_is_a_warning():
    runs = [{"init": "pretrained", "seed": 1, "collapsed": {"dev": "'1' for every example"},
             "diverged": None},
            {"init": "random", "seed": 1, "collapsed": {}, "diverged": "training loss nan"}]
    found = run_warnings(runs, "dev", "rows")
    assert found == ["pretrained seed 1 predicts '1' for every example: it collapsed to one answer (more "
                     "--epochs, another --lr?)",
                     "random seed 1: training diverged (training loss nan): its scores mean nothing; lower "
                     "--lr"]
