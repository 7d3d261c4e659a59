"""A steady validation score: the validation rows masked several times (masking k from (seed, "eval", k)),
scores averaged, and a standard error beside each accuracy that counts rows and masks alike."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from tests.trainer.test_train import small_run
from trainer.config import load_config
from trainer.dist import Dist
from trainer.train import Trainer, train
from trainer.validation import ratio_moments, ratio_se


def test_the_standard_error_is_the_spread_of_the_score_over_samples_of_rows_and_masks():
    """Rows of unequal difficulty (a row's accuracy ~ Beta), unequal numbers of masked tokens, K maskings
    of each: over 2,000 simulated validation sets, the standard deviation of the score is what ratio_se
    says it is (within 10%), where the binomial formula over tokens says too little."""
    rng = np.random.default_rng(0)
    rows, maskings = 400, 3
    difficulty = rng.beta(2, 6, rows * 2000).reshape(2000, rows)  # a new sample of rows each time
    masked = rng.integers(3, 21, (2000, rows)) * maskings
    correct = rng.binomial(masked, difficulty)
    scores = correct.sum(1) / masked.sum(1)
    said = [ratio_se(ratio_moments(torch.from_numpy(y), torch.from_numpy(n)).tolist())
            for y, n in zip(correct[:200], masked[:200], strict=True)]
    assert np.mean(said) == pytest.approx(scores.std(), rel=0.1)
    tokens = masked.sum(1).mean()
    binomial = math.sqrt(scores.mean() * (1 - scores.mean()) / tokens)
    assert binomial < 0.7 * scores.std()  # tokens of a row are not independent draws
    assert math.isnan(ratio_se([1.0, 2.0, 1.0, 2.0, 4.0, 1.0]))  # one row: no spread to measure


def configured(tiny_shards, tmp_path, *extra):
    return load_config(None, small_run(tiny_shards, tmp_path, "eval.max_batches=8", *extra))


def test_evaluation_averages_seeded_maskings_and_reports_standard_errors(tiny_shards, tmp_path):
    torch.set_num_threads(1)
    trainer = Trainer(configured(tiny_shards, tmp_path / "a", "eval.maskings=3"), Dist(), torch.device("cpu"))
    for _ in range(3):
        trainer.train_step()
    scores = trainer.evaluate()
    assert set(scores) == {"val_mlm_loss", "val_mlm_acc", "val_mlm_acc_se", "val_nsp_loss", "val_nsp_acc",
                           "val_nsp_acc_se"}
    assert 0 < scores["val_mlm_acc_se"] < 0.05 and 0 < scores["val_nsp_acc_se"] < 0.1
    assert trainer.evaluate() == scores  # the masks come from (seed, "eval", k), not from the run's state
    # each masking masks the same 64 rows otherwise (same prediction budget per row, other positions)
    trainer.model.eval()
    first, second = trainer._evaluate_masking(0), trainer._evaluate_masking(1)
    assert first.shape == (64, 6) and torch.equal(first[:, 2], second[:, 2])
    assert not torch.equal(first[:, 0], second[:, 0])
    # the score is the mean over the maskings, weighted by predictions
    rows = first + second + trainer._evaluate_masking(2)
    assert scores["val_mlm_acc"] == pytest.approx(float(rows[:, 1].sum() / rows[:, 2].sum()))
    # maskings = 0: the masking the shard stage wrote, as before
    trainer.eval_maskings, trainer.eval_mask_vocab = 0, None
    shard_masks = trainer.evaluate()
    assert shard_masks["val_mlm_acc"] != scores["val_mlm_acc"] and shard_masks["val_mlm_acc_se"] > 0


def test_the_standard_error_is_logged_beside_the_score(tiny_shards, tmp_path, capsys):
    train(configured(tiny_shards, tmp_path, "schedule.steps=6", "eval.maskings=2"))
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    validation = [r for r in records if "val_mlm_acc" in r]
    assert [r["step"] for r in validation] == [6] and validation[0]["val_mlm_acc_se"] > 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "| validation" in x)
    assert f"mlm_acc {validation[0]['val_mlm_acc']:.4f} ±{validation[0]['val_mlm_acc_se']:.4f}" in line
