"""The tiny preset learns from real text on CPU within a test budget: masked LM and next sentence prediction,
measured on held-out documents (the validation split shares no document with train)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from tests.trainer.conftest import build_shards
from trainer.config import load_config
from trainer.train import train


@pytest.fixture(scope="module")
def short_shards(tmp_path_factory, demo_text) -> Path:
    """The demo text as pairs of at most 32 tokens over a 1,000-token vocab, 30% of documents held out.

    Short pairs make a step ~2x cheaper than at 64 tokens, and NSP accuracy grows with the number of
    pairs seen more than with their length; the small vocab lets masked LM (whose representations NSP
    builds on) get going sooner. ~11,400 train / ~5,300 validation pairs.
    """
    out = tmp_path_factory.mktemp("short_shards")
    return build_shards(out, demo_text, vocab_size=1000, max_seq_length=32, validation_fraction=0.3)


def masked_labels(shards: Path, split: str) -> np.ndarray:
    tables = [pq.read_table(p, columns=["masked_lm_ids"]) for p in sorted((shards / split).glob("*.parquet"))]
    return np.concatenate([t["masked_lm_ids"].combine_chunks().flatten().to_numpy() for t in tables])


def unigram_baselines(shards: Path, vocab: int) -> tuple[float, float]:
    """What token frequency alone achieves on the validation predictions: (cross-entropy of the training
    labels' unigram distribution, add-one smoothed; accuracy of always predicting the commonest token)."""
    counts = np.bincount(masked_labels(shards, "train"), minlength=vocab) + 1.0
    val = masked_labels(shards, "validation")
    return float(-np.log(counts[val] / counts.sum()).mean()), float((val == counts.argmax()).mean())


def run(shards: Path, run_dir: Path, steps: int, batch_size: int) -> dict:
    torch.set_num_threads(1)  # the budget is for one core; also steadier on a shared machine
    overrides = [
        f'data.shards="{shards}"', f'logging.run_dir="{run_dir}"', 'device="cpu"',
        f"schedule.steps={steps}", f"schedule.warmup_steps={steps // 10}", f"data.batch_size={batch_size}",
        "optim.lr=1e-3", "model.dropout=0.0", "model.attention_dropout=0.0",  # few steps: no regularising
        f"eval.every={steps}", "eval.max_batches=0", f"checkpoint.every={steps}", "logging.every=1",
    ]
    return train(load_config(None, overrides))


@pytest.mark.slow
def test_tiny_preset_learns_masked_lm_and_next_sentence_on_held_out_text(short_shards, tmp_path):
    """1,200 steps x 32 pairs of demo text (length <= 32, vocab 1,000); ~60 s on one core.

    Masked LM. Logits are ~0 at init, so the loss starts at ln(1000) = 6.9. Token frequency alone reaches
    the unigram cross-entropy (~5.9) and the commonest token's share as accuracy (~3.7%); going below /
    above those on held-out documents means the model uses context (measured: 5.4 and 15%). ~26,000 masked
    validation tokens give a standard error of ~0.02 nats and ~0.002 in accuracy: the margins (0.1 nats,
    1.3x) are far outside it.

    Next sentence prediction. The validation split is balanced (the majority class is < 50.1%), so an
    accuracy above chance means the model tells IsNext from NotNext. With N ~ 5,300 held-out pairs the
    standard error of an accuracy near 0.5 is 0.5 / sqrt(N) ~ 0.007: the bar is the majority rate plus 3
    standard errors (~0.521; a 1-in-700 chance for a model that cannot tell). NSP is slow to start in a
    2-layer model: it stays at chance until masked LM reaches ~14% accuracy (~800 steps here), then climbs
    (measured 0.538 at the end, 5.5 standard errors). Training is seeded, but the WordPiece trainer may
    order equally frequent pieces differently from one process to the next, so token ids (and with them
    the run) can vary slightly between sessions; the margins are meant to cover that too.
    """
    summary = run(short_shards, tmp_path, steps=1200, batch_size=32)
    manifest = json.loads((short_shards / "manifest.json").read_text())
    vocab = manifest["vocab"]["size"]
    start = math.log(vocab)
    unigram_loss, unigram_acc = unigram_baselines(short_shards, vocab)
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    first_mlm = next(r["mlm_loss"] for r in records if "mlm_loss" in r)
    assert first_mlm == pytest.approx(start, abs=0.3)  # the logged start really is ~ln V
    assert summary["val_mlm_loss"] < start - 1.0, summary
    assert summary["val_mlm_loss"] < unigram_loss - 0.1, (unigram_loss, summary)
    assert summary["val_mlm_acc"] > 1.3 * unigram_acc, (unigram_acc, summary)

    validation = manifest["splits"]["validation"]
    n = validation["examples"]
    majority = max(validation["is_next"], validation["not_next"]) / n
    print(
        f"val mlm loss {summary['val_mlm_loss']:.3f} (ln V {start:.3f}, unigram {unigram_loss:.3f}) acc "
        f"{summary['val_mlm_acc']:.4f} (unigram {unigram_acc:.4f}); val nsp acc {summary['val_nsp_acc']:.4f} "
        f"loss {summary['val_nsp_loss']:.4f} on {n} pairs (bar {majority + 3 * 0.5 / math.sqrt(n):.4f})"
    )
    assert n > 4000 and majority < 0.501
    assert summary["val_nsp_acc"] > majority + 3 * 0.5 / math.sqrt(n), (n, summary)
    assert summary["val_nsp_loss"] < math.log(2), summary
