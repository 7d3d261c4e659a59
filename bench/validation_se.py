"""How steady is a validation score? The standard error of held-out MLM accuracy by number of maskings and
of rows, for a trained model on its validation split, as the trainer's evaluation computes it.

    PYTHONPATH=. .venv/bin/python bench/validation_se.py RUN_DIR [--shards DIR] [--split validation]
        [--maskings 8] [--rows 1600 6400 0] [--threads 1]

RUN_DIR: a training run (its newest checkpoint); --shards: the shards it trained on (default: the run's
config). Each masking k is drawn from (seed, "eval", k), as `trainer.train.Trainer.evaluate` draws it; the
standard error is `trainer.validation.ratio_se` (rows as the unit, a row's counts summed over its maskings).
"maskings 0" is the one masking the shard stage wrote (the evaluation before eval.maskings). The spread of the
score over single maskings (sd over k) shows the part the masks alone contribute.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from pathlib import Path

import numpy as np
import torch

from corpusprep.mask import MaskVocab
from trainer import checkpoint
from trainer.config import DataConfig, ModelConfig
from trainer.data import ShardStream
from trainer.model import BertForPreTraining
from trainer.resume import init_weights
from trainer.shards import open_shards
from trainer.validation import ratio_moments, ratio_se, score_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--shards", type=Path, help="default: the shards the run was trained on")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--maskings", type=int, default=8)
    parser.add_argument("--rows", type=int, nargs="+", default=[1600, 6400, 0], help="first N rows; 0: all")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print("reproduce:", shlex.join([sys.executable, *sys.argv]))
    found = checkpoint.latest(args.run_dir)
    shards_dir = args.shards or Path(checkpoint.read_config(found)["train"]["data"]["shards"])
    shards = open_shards(shards_dir, ("train", args.split))
    bert, state, _ = init_weights(
        args.run_dir, ModelConfig(dropout=0.0, attention_dropout=0.0), shards.vocab.size,
        shards.manifest["vocab"]["sha256"], shards_dir / "manifest.json", shards.objective.name,
    )
    model = BertForPreTraining(bert)
    model.load_state_dict(state, strict=False)
    model.eval()
    seed = checkpoint.read_config(found)["train"]["seed"]
    mask_vocab = MaskVocab.from_vocab(shards.vocab_info(), shards.word_segmenter())

    # only the rows a line of the table needs (0: all of them)
    batches = 0 if 0 in args.rows else -(-max(args.rows) // args.batch_size)

    def masking(k: int | None) -> torch.Tensor:
        stream = ShardStream(shards, args.split, DataConfig(batch_size=args.batch_size), seed, shuffle=False,
                             loop=False, mask_vocab=None if k is None else mask_vocab, mask_key=("eval", k))
        return score_rows(model, stream, batches, torch.device("cpu"), contextlib.nullcontext)

    shard_masks = masking(None)
    per_k = [masking(k) for k in range(args.maskings)]
    total = len(shard_masks)
    print(f"{found}: {total:,} {args.split} rows, {int(shard_masks[:, 2].sum()):,} predictions a masking")
    print("| rows | maskings | MLM accuracy | standard error | sd over single maskings / sqrt(K) |")
    print("|---:|---:|---:|---:|---:|")
    for rows in args.rows:
        n = rows or total
        if n > total:
            continue
        first = shard_masks[:n]
        print(f"| {n:,} | shards' 1 | {first[:, 1].sum() / first[:, 2].sum():.4f} | "
              f"{ratio_se(ratio_moments(first[:, 1], first[:, 2]).tolist()):.4f} | |")
        singles = [float(r[:n, 1].sum() / r[:n, 2].sum()) for r in per_k]
        for K in sorted({1, 2, 4, args.maskings} & set(range(1, args.maskings + 1))):
            summed = sum(per_k[:K])[:n]
            acc = float(summed[:, 1].sum() / summed[:, 2].sum())
            se = ratio_se(ratio_moments(summed[:, 1], summed[:, 2]).tolist())
            spread = np.std(singles, ddof=1) / np.sqrt(K)
            print(f"| {n:,} | {K} | {acc:.4f} | {se:.4f} | {spread:.4f} |")


if __name__ == "__main__":
    main()
