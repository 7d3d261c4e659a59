"""Validation statistics: per-row counts of a model's masked-LM and sentence-task predictions on a stream
of rows (`score_rows`), and the standard error of an accuracy with rows as the sampling unit
(`ratio_moments`, summed over ranks, then `ratio_se`). The trainer's evaluation (`Trainer.evaluate`) and the
benches (bench/fidelity.py, bench/validation_se.py) score with these same functions."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from trainer.batch import forward_loss, to_device
from trainer.data import ShardStream


@torch.no_grad()
def score_rows(
    model: nn.Module, stream: ShardStream, max_batches: int, device: torch.device, autocast
) -> torch.Tensor:
    """[R, 6] float64, one row per row of `stream` (up to `max_batches` batches; 0: all): its MLM loss sum,
    correct predictions and predictions; its sentence loss, correct (0 or 1) and 1 (zeros without a
    sentence task). Sums of these over rows give the scores, and `ratio_moments` their standard errors."""
    loader = DataLoader(stream, batch_size=None, num_workers=0, generator=torch.Generator())
    per_batch = []
    for i, batch in enumerate(loader):
        if max_batches and i >= max_batches:
            break
        batch = to_device(batch, device)
        mlm_logits, sentence_logits, *_ = forward_loss(model, batch, autocast)
        labels, (B, L) = batch["mlm_labels"], batch["rows"].shape
        # positions index the flat tokens [T]; a token's slot is its place r * L + i in the [B, L] rows
        row = torch.div(batch["slots"][batch["mlm_positions"]], L, rounding_mode="floor")
        losses = F.cross_entropy(mlm_logits.float(), labels, reduction="none").double()
        stats = torch.zeros(6, B, dtype=torch.float64, device=device)
        stats[0].index_add_(0, row, losses)
        stats[1].index_add_(0, row, (mlm_logits.argmax(-1) == labels).double())
        stats[2].index_add_(0, row, torch.ones_like(losses))
        if sentence_logits is not None:
            targets = batch["sentence_labels"]
            stats[3] = F.cross_entropy(sentence_logits.float(), targets, reduction="none").double()
            stats[4] = (sentence_logits.argmax(-1) == targets).double()
            stats[5] = 1.0
        per_batch.append(stats.T.cpu())
    return torch.cat(per_batch) if per_batch else torch.zeros(0, 6, dtype=torch.float64)


def ratio_moments(y: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """What `ratio_se` needs of per-row counts y (correct) out of n (predicted), as sums that add up over
    ranks: [sum y, sum n, sum y^2, sum y n, sum n^2, rows]."""
    y, n = y.double(), n.double()
    rows = (n > 0).sum().double()
    return torch.stack([y.sum(), n.sum(), (y * y).sum(), (y * n).sum(), (n * n).sum(), rows])


def ratio_se(moments: list[float]) -> float:
    """Standard error of the accuracy sum(y) / sum(n) with rows as the sampling unit (the ratio estimator's
    linearisation, as for cluster samples): sqrt(sum (y_i - a n_i)^2 / (R (R - 1))) / mean(n). The tokens
    of a row share its text, and its maskings share it too, so they are not independent draws: the row is.
    It counts both the choice of rows and of masks (each row's counts summed over its maskings); NaN for
    fewer than two rows."""
    y, n, yy, yn, nn, rows = moments
    if rows < 2 or n <= 0:
        return math.nan
    a = y / n
    spread = max(yy - 2 * a * yn + a * a * nn, 0.0) / (rows - 1)
    return math.sqrt(spread / rows) / (n / rows)
