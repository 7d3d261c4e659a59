"""One training step, ours beside Hugging Face's, on the same batches: sequences/s and the ratio.

Ours: `trainer.batch.collate` (what the DataLoader workers hand the trainer) -> `trainer.batch.forward_loss`
-> backward -> AdamW, the trainer's own step. Peer: `transformers.BertForPreTraining` (or `BertForMaskedLM`
for packed rows) with `attn_implementation="sdpa"`, fed by `corpusprep.interop.hf.PreTrainingCollator` from
the very same rows (packed rows: its position ids and 4-D per-piece mask). Same config, dropout on, fp32.

    .venv/bin/python bench/step.py                                 # mini at 128, eager, both mixes
    .venv/bin/python bench/step.py --presets mini base --lengths 128 512 --modes eager compiled

The two alternate step by step in one process (their order swapping each step), so a shared machine's load
falls on both alike: read the ratio, not the rates. Collation is done before timing (the loader's cost is
bench/loader.py's). Mixes: `bert` (90% of rows full length, 10% shorter, as Google's data), `packed`
(objective `none`: rows 90% full, each cut into 1-4 pieces). Batches hold about --tokens tokens.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from corpusprep.engine.rng import rng_for  # noqa: E402
from corpusprep.interop.hf import PreTrainingCollator  # noqa: E402
from corpusprep.objectives import objective  # noqa: E402
from corpusprep.shard.schema import shard_schema  # noqa: E402
from trainer import model as model_module  # noqa: E402
from trainer.batch import collate, forward_loss  # noqa: E402
from trainer.config import preset  # noqa: E402
from trainer.model import BertForPreTraining  # noqa: E402

VOCAB, PAD, CLS, SEP = 30522, 0, 101, 102


def synthetic_rows(rows: int, max_len: int, packed: bool, seed: int) -> pa.Table:
    """Shard rows: 90% full length, 10% uniform 16..max_len; 15% of the tokens after [CLS] masked (at most
    BERT's cap, 20 at 128); `packed`: each row cut into 1-4 pieces `[CLS] ... [SEP]` of >= 8 tokens."""
    rng = rng_for(seed, "bench-step", max_len, packed)
    lengths = np.where(rng.random(rows) < 0.9, max_len, rng.integers(16, max_len, rows))
    cap = round(0.15 * max_len) + 1
    records = []
    for n in lengths:
        ids = rng.integers(1000, VOCAB, n)
        ids[0], ids[-1] = CLS, SEP
        starts = [0]
        if packed:
            cuts = np.sort(rng.choice(np.arange(8, n - 7, 8), min(rng.integers(0, 4), (n - 8) // 8), False))
            starts += [int(c) for c in cuts]
            ids[cuts], ids[cuts - 1] = CLS, SEP
        chosen = np.sort(rng.choice(np.arange(1, n - 1), min(cap, max(1, round(0.15 * n))), replace=False))
        types = np.zeros(n, np.int64) if packed else (np.arange(n) >= n // 2).astype(np.int64)
        labels = ids[chosen].copy()
        ids[chosen] = 103  # [MASK]; what the mask hides makes no difference to the speed
        own = {"document_starts": starts} if packed else {"next_sentence_label": int(rng.integers(0, 2))}
        records.append({"input_ids": ids.tolist(), "token_type_ids": types.tolist(),
                        "masked_lm_positions": chosen.tolist(), "masked_lm_ids": labels.tolist(), **own,
                        "num_tokens": int(n)})
    return pa.Table.from_pylist(records, schema=shard_schema(objective="none" if packed else "nsp"))


def hf_model(config, packed: bool):
    import transformers

    hf_config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads, intermediate_size=config.intermediate_size,
        hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.attention_dropout,
    )
    cls = transformers.BertForMaskedLM if packed else transformers.BertForPreTraining
    return cls._from_config(hf_config, attn_implementation="sdpa")


def compile_ours(model):
    """The trainer's compile: `trainer.model.compile_model` (trees before issue 25: each block and the
    MLM head compiled with dynamic shapes, the unpadding layout left eager)."""
    if hasattr(model_module, "compile_model"):
        return model_module.compile_model(model)
    for block in [*model.layers, model.mlm_head]:
        block.compile(dynamic=True)
    return model


def bench(name: str, length: int, packed: bool, compiled: bool, args) -> tuple[float, float]:
    rows = max(args.tokens // length, 1)
    spec = objective("none" if packed else "nsp")
    tables = [synthetic_rows(rows, length, packed, seed=i) for i in range(args.warmup + args.steps)]
    ours_batches = [collate(t, PAD, 8, spec) for t in tables]
    hf_collator = PreTrainingCollator(PAD, 8, nsp=not packed, packed=packed)
    hf_batches = [hf_collator(t.to_pylist()) for t in tables]
    config = preset(name, vocab_size=VOCAB, objective=spec.name)
    torch._dynamo.reset()  # each case compiles afresh (no cache limit reached, no graph of another case)
    torch.manual_seed(0)
    ours, theirs = BertForPreTraining(config).train(), hf_model(config, packed).train()
    if compiled:
        ours, theirs = compile_ours(ours), torch.compile(theirs)
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-5) for m in (ours, theirs)]

    def ours_step(i):
        forward_loss(ours, ours_batches[i], contextlib.nullcontext)[2].backward()

    def hf_step(i):
        theirs(**hf_batches[i]).loss.backward()

    times: dict[str, list[float]] = {"ours": [], "hf": []}
    for i in range(args.warmup + args.steps):
        order = [("ours", ours_step, 0), ("hf", hf_step, 1)]
        for label, step, k in order if i % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            step(i)
            optimizers[k].step()
            optimizers[k].zero_grad(set_to_none=True)
            if i >= args.warmup:
                times[label].append(time.perf_counter() - start)
    return rows / statistics.median(times["ours"]), rows / statistics.median(times["hf"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", nargs="+", default=["mini"])
    p.add_argument("--lengths", nargs="+", type=int, default=[128])
    p.add_argument("--modes", nargs="+", choices=["eager", "compiled"], default=["eager"])
    p.add_argument("--mixes", nargs="+", choices=["bert", "packed"], default=["bert", "packed"])
    p.add_argument("--tokens", type=int, default=4096, help="tokens per batch (rows = tokens // length)")
    p.add_argument("--steps", type=int, default=6, help="timed steps (the median counts)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first (compilation happens here)")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"command: .venv/bin/python bench/step.py {' '.join(sys.argv[1:])}")
    load = os.getloadavg()[0]
    print(f"torch {torch.__version__}, {args.threads} thread(s), load average {load:.1f} at start")
    print(f"{'preset':<7}{'length':>7}{'mix':>8}{'mode':>10}{'rows':>6}{'ours seq/s':>12}{'HF seq/s':>10}"
          f"{'ours/HF':>9}")
    for name in args.presets:
        for length in args.lengths:
            for mix in args.mixes:
                for mode in args.modes:
                    ours, hf = bench(name, length, mix == "packed", mode == "compiled", args)
                    print(f"{name:<7}{length:>7}{mix:>8}{mode:>10}{max(args.tokens // length, 1):>6}"
                          f"{ours:>12.2f}{hf:>10.2f}{ours / hf:>8.2f}x", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
