"""Trainer throughput on CPU: packed rows against the same pieces padded one a row, in one run.

    .venv/bin/python bench/train_packing.py [--mb 2] [--max-seq-length 128] [--preset mini] [--rows 32]
        [--steps 12] [--threads 2]

Data: the first --mb MB of ../shared/corpus/enwiki_AA.txt.xz with Google's vocab (the demo corpus and
a trained vocab when ../shared is absent) -> `build-pairs --objective none --pack` -> `shard`.

- packed: batches of --rows rows, each row several documents' pieces `[CLS] text [SEP]`, attention (a
  [B, 1, L, L] block-diagonal mask) and positions kept inside each piece;
- padded: the very same pieces, one a row, padded to the batch's longest (rounded up to 8), in batches of
  the same number of real tokens on average.

Both run full training steps (forward, backward, AdamW) of the same model from the same weights; the figure
is real (non-padding) tokens per second, best of --repeat. Our model unpads every token-wise layer, so
padding costs only in attention and the embedding lookup: the gain of packing here is what is left, plus
fewer, fuller steps.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from build_pairs import SHARED, make_vocab, prefix_corpus  # noqa: E402

from corpusprep.engine.stage import RunContext  # noqa: E402
from corpusprep.objectives import objective  # noqa: E402
from trainer.batch import collate, forward_loss  # noqa: E402
from trainer.config import preset  # noqa: E402
from trainer.model import BertForPreTraining  # noqa: E402


def build(work: Path, mb: float, max_seq_length: int) -> Path:
    from corpusprep.pair.build import PairOptions, build_pairs
    from corpusprep.read import ReadOptions
    from corpusprep.shard.build import build_shards
    from corpusprep.shard.options import ShardOptions

    if (SHARED / "enwiki_AA.txt.xz").is_file():
        text, vocab = prefix_corpus(mb, work / "corpus.txt"), make_vocab(work / "vocab")
        read = ReadOptions(format="wiki")
    else:  # a fresh machine: the demo corpus and a vocab trained on it
        from corpusprep.tokenize.vocab import VocabOptions, train_vocab
        from tests.trainer.conftest import write_demo_text

        text = write_demo_text(work / "corpus.jsonl", mb)
        vocab = work / "vocab"
        train_vocab([text], vocab, VocabOptions(vocab_size=8000))
        read = ReadOptions()
    options = PairOptions(max_seq_length, dupe_factor=1, objective="none", validation_fraction=0)
    quiet = RunContext(progress=False)
    build_pairs([text], vocab, work / "pairs", options, read, context=quiet)
    build_shards(work / "pairs", vocab, work / "shards", ShardOptions(seed=1), context=quiet)
    return work / "shards"


def pieces_as_rows(table: pa.Table) -> pa.Table:
    """Every piece of every packed row as a row of its own, masks and all (the padded layout)."""
    rows = []
    for r in table.to_pylist():
        ends = [*r["document_starts"][1:], len(r["input_ids"])]
        for start, end in zip(r["document_starts"], ends, strict=True):
            keep = [i for i, p in enumerate(r["masked_lm_positions"]) if start <= p < end]
            rows.append({
                "input_ids": r["input_ids"][start:end], "token_type_ids": r["token_type_ids"][start:end],
                "masked_lm_positions": [r["masked_lm_positions"][i] - start for i in keep],
                "masked_lm_ids": [r["masked_lm_ids"][i] for i in keep], "document_starts": [0],
                "num_tokens": end - start,
            })
    return pa.Table.from_pylist(rows, schema=table.schema)


def batches(table: pa.Table, rows: int, pad_id: int) -> list[dict[str, torch.Tensor]]:
    spec = objective("none")
    return [collate(table.slice(i, rows), pad_id, 8, spec) for i in range(0, table.num_rows - rows + 1, rows)]


def tokens_per_second(model, batches: list[dict], steps: int, repeat: int) -> tuple[float, float]:
    """(real tokens/s over `steps` training steps, best of `repeat`; padding share of the batches)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    best = 0.0
    for _ in range(repeat):
        start, tokens = time.perf_counter(), 0
        for batch in batches[:steps]:
            forward_loss(model, batch, contextlib.nullcontext)[2].backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            tokens += batch["num_tokens"]
        best = max(best, tokens / (time.perf_counter() - start))
    cells = sum(b["rows"].numel() for b in batches[:steps])  # attention's grid of rows
    real = sum(b["num_tokens"] for b in batches[:steps])
    return best, 1 - real / cells


def attention_seconds(batches: list[dict], heads: int, head_dim: int, repeat: int) -> dict[str, float]:
    """Attention alone (SDPA forward + backward) on the packed batches, two ways: the [B, 1, L, L]
    block-diagonal mask over the rows that the model uses, and a grid of the pieces ([pieces, heads,
    longest piece rounded up to 8, head_dim] with a key-padding mask, what a varlen kernel without padding
    would approach). Best of `repeat`, in seconds."""
    import torch.nn.functional as F

    from trainer.model import Layout

    def run(layouts: list[tuple[tuple[int, int], torch.Tensor]]) -> float:
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            for (rows, length), mask in layouts:
                q, k, v = (torch.randn(rows, heads, length, head_dim, requires_grad=True) for _ in range(3))
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
            best = min(best, time.perf_counter() - start)
        return best

    blocks, grids = [], []
    for b in batches:
        layout = Layout(b["cu_seqlens"], b["rows"], b["slots"])
        blocks.append((tuple(b["rows"].shape), layout.mask))
        pieces = torch.diff(b["cu_seqlens"])[: int((b["cu_seqlens"] < b["num_tokens"]).sum())]
        width = -(-int(pieces.max()) // 8) * 8
        grids.append(((len(pieces), width), (torch.arange(width) < pieces[:, None])[:, None, None, :]))
    return {"block mask": run(blocks), "piece grid": run(grids)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mb", type=float, default=2.0)
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--preset", default="mini")
    p.add_argument("--rows", type=int, default=32, help="packed rows per batch")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        shards = build(Path(tmp), args.mb, args.max_seq_length)
        import json

        manifest = json.loads((shards / "manifest.json").read_text())
        pad_id, vocab_size = manifest["vocab"]["special_ids"]["[PAD]"], manifest["vocab"]["size"]
        packed = pa.concat_tables(pq.read_table(f) for f in sorted((shards / "train").glob("*.parquet")))
        pieces = pieces_as_rows(packed)
    per_row = pieces.num_rows / packed.num_rows
    padded_rows = max(1, round(args.rows * per_row))  # the same real tokens per batch on average
    results = {}
    for name, table, rows in (("packed", packed, args.rows), ("padded", pieces, padded_rows)):
        torch.manual_seed(0)
        model = BertForPreTraining(preset(args.preset, vocab_size=vocab_size, objective="none",
                                          max_position=max(args.max_seq_length, 128)))
        results[name] = tokens_per_second(model, batches(table, rows, pad_id), args.steps, args.repeat)
    print(f"command: {' '.join(sys.argv)}")
    print(f"{packed.num_rows:,} packed rows of <= {args.max_seq_length} tokens, {per_row:.2f} pieces a row; "
          f"model {args.preset}, {args.threads} threads, {args.steps} steps")
    for name, (rate, padding) in results.items():
        print(f"{name:<7} {rate:>10,.0f} tokens/s   padding {padding:.1%} of the batch grid")
    print(f"packed / padded: {results['packed'][0] / results['padded'][0]:.2f}x tokens/s")
    config = preset(args.preset, vocab_size=vocab_size)
    head_dim = config.hidden_size // config.num_heads
    kernels = attention_seconds(batches(packed, args.rows, pad_id)[: args.steps], config.num_heads, head_dim,
                                args.repeat)
    print(f"attention only, {args.steps} packed batches (forward + backward): " + ", ".join(
        f"{name} {seconds * 1e3:,.0f} ms" for name, seconds in kernels.items()))
    print(f"piece grid / block mask: {kernels['piece grid'] / kernels['block mask']:.2f}x the time")


if __name__ == "__main__":
    main()
