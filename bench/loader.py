"""Loader throughput and memory: examples/s of `trainer.data.ShardStream` alone (one worker, no model) and
its peak RSS growth, over 1 and over 8 shard files holding the same rows; beside a naive peer that reads
the whole split into memory (`pq.read_table`) and collates from it. Targets: >= 30,000 examples/s per
worker at length 128; RSS not growing with the shard count. And the unpadding collator alone
(`trainer.batch.collate` on rows already read and masked: the work a DataLoader worker adds per batch):
>= 10,000 sequences/s of length 128 per worker, so that a BERT-base step on an H100 (~7,000 sequences/s)
never waits for it. And one consumer of several (`--consumers`): rank 0 of as many ranks, and DataLoader
worker 0 of as many workers of one rank, each over its share of the epoch. The global order is cut into
slices of a batch, so ranks whose slices fall in one row group each decode it; a rank's workers make runs
of micro-batches that cover a chunk (`trainer.data.loader_batches`), so they share few. Row groups:
`--row-group` (`corpusprep shard` writes 256).

    .venv/bin/python bench/loader.py                # 200,000 rows of length <= 128 in a temp dir
    .venv/bin/python bench/loader.py --rows 50000   # quicker

Each measurement runs in a fresh subprocess so peak RSS is its own. The data are synthetic token ids
in the shard schema (content does not matter to the loader; lengths do: 90% full length, 10% shorter).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from corpusprep.engine.artifact import Artifact  # noqa: E402
from corpusprep.engine.outputs import OUTPUT_KINDS  # noqa: E402
from corpusprep.engine.rng import rng_for  # noqa: E402
from corpusprep.shard.schema import SHARD_SCHEMA  # noqa: E402


def synthetic_split(rows: int, max_len: int, seed: int = 0) -> pa.Table:
    rng = rng_for(seed, "bench-loader")
    lengths = np.where(rng.random(rows) < 0.9, max_len, rng.integers(16, max_len, rows))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    ids = rng.integers(5, 30522, offsets[-1]).astype(np.uint16)
    types = np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths) > np.repeat(lengths // 2, lengths)
    n_mask = np.maximum(1, (lengths * 0.15).astype(np.int64))
    pos_offsets = np.concatenate([[0], np.cumsum(n_mask)]).astype(np.int32)
    # masked positions: the first n after [CLS], sorted (the loader does not care which)
    positions = (np.arange(pos_offsets[-1]) - np.repeat(pos_offsets[:-1], n_mask) + 1).astype(np.uint16)

    def lists(offs, values, t):
        return pa.ListArray.from_arrays(pa.array(offs), pa.array(values, t))

    columns = [
        lists(offsets, ids, pa.uint16()),
        lists(offsets, types.astype(np.uint8), pa.uint8()),
        lists(pos_offsets, positions, pa.uint16()),
        lists(pos_offsets, rng.integers(5, 30522, pos_offsets[-1]).astype(np.uint16), pa.uint16()),
        pa.array(rng.integers(0, 2, rows).astype(np.uint8)),
        pa.array(lengths.astype(np.uint16)),
    ]
    return pa.Table.from_arrays([c.cast(f.type) for c, f in zip(columns, SHARD_SCHEMA, strict=True)],
                                schema=SHARD_SCHEMA)


def write_shards(table: pa.Table, out: Path, num_shards: int, row_group: int = 4096) -> Path:
    entries = []
    for s, part in enumerate(np.array_split(np.arange(table.num_rows), num_shards)):
        path = out / "train" / f"shard-{s:05d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.slice(part[0], len(part)), path, row_group_size=row_group, compression="zstd")
        data = path.read_bytes()
        entries.append({"path": f"train/{path.name}", "rows": len(part), "bytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()})
    specials = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
    longest = pc.max(pc.list_value_length(table["input_ids"])).as_py()
    manifest = {"schema_version": 1, "max_seq_length": longest, "token_dtype": "uint16",
                "options": {"masked_lm_prob": 0.15, "max_predictions_per_seq": 20},
                "vocab": {"path": "vocab", "sha256": "0" * 64, "size": 30522, "special_ids": specials},
                "splits": {"train": {"shards": entries, "examples": table.num_rows}},
                "totals": {"examples": table.num_rows}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    owned = [p.relative_to(out).as_posix() for p in sorted(out.rglob("*")) if p.is_file()]
    kind = OUTPUT_KINDS["shards"].adopting(owned)
    with Artifact(out, kind, {"bench_loader": num_shards}, quiet=True) as made:
        made.commit(files=owned)  # as `corpusprep shard` finishes: the trainer refuses unfinished shards
    return out


def rss_mb(field: str = "VmHWM") -> float:
    """Peak (VmHWM) or current (VmRSS) resident memory of this process, Linux."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # peak only, elsewhere


def measure(kind: str, shards_dir: str, batch_size: int, consumers: int) -> dict:
    """Runs in the subprocess: one epoch through the loader, timed, with peak RSS before and after. "ours":
    the one consumer of the whole epoch; "rank": rank 0 of `consumers` ranks, its share of the epoch (it
    reads every chunk its slices fall in); "worker": DataLoader worker 0 of `consumers` of one rank, making
    runs of micro-batches as the trainer's workers do (`trainer.data.loader_batches`), its share."""
    from trainer.batch import collate
    from trainer.config import DataConfig
    from trainer.data import ShardStream
    from trainer.shards import open_shards

    shards = open_shards(shards_dir)
    rows = sum(f.rows for f in shards.files("train"))
    before = rss_mb("VmRSS")  # growth = peak during the epoch above what the imports left resident
    start, cpu = time.perf_counter(), time.process_time()
    seen = 0
    if kind in ("ours", "rank", "worker"):
        world = consumers if kind == "rank" else 1
        stream = ShardStream(shards, "train", DataConfig(batch_size=batch_size), seed=0, world_size=world,
                             loop=False)
        workers = consumers if kind == "worker" else 1
        stream.group = stream.grouped(workers)
        for item in stream.worker_batches(0, workers):
            seen += sum(len(batch["rows"]) for batch in (item if stream.group > 1 else [item]))
        share = rows / consumers if kind != "ours" else rows
        assert abs(seen - share) <= batch_size * stream.group, (seen, rows, kind)  # to within a run
        rows = seen
    elif kind == "collate":  # the collator alone, over batches already read
        stream = ShardStream(shards, "train", DataConfig(batch_size=batch_size), seed=0, loop=False)
        tables = [t.slice(i, batch_size) for t in stream.rows() for i in range(0, t.num_rows, batch_size)]
        start, cpu = time.perf_counter(), time.process_time()
        for table in tables:
            seen += len(collate(table, 0, 8, shards.objective)["rows"])
    else:  # naive peer: the whole split in memory, random batches by index
        table = pa.concat_tables(pq.read_table(f.path) for f in shards.files("train"))
        order = rng_for(0, "peer").permutation(rows)
        for i in range(0, rows, batch_size):
            batch = collate(table.take(order[i : i + batch_size]), 0)
            seen += len(batch["rows"])
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    assert seen == rows, (seen, rows)
    return {"examples_per_s": rows / seconds, "per_cpu_s": rows / cpu_seconds,
            "rss_growth_mb": rss_mb() - before, "peak_rss_mb": rss_mb()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--consumers", type=int, default=4, help="ranks x workers, for one consumer's share")
    p.add_argument("--row-group", type=int, default=4096, help="rows per Parquet row group (shard: 256)")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1], args.batch_size, args.consumers)))
        return

    table = synthetic_split(args.rows, args.max_len)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 8):
            shards_dir = write_shards(table, Path(tmp) / f"s{n}", n, args.row_group)
            for kind in ("ours", "rank", "worker", "peer", "collate")[: 5 if n == 1 else 4]:
                out = subprocess.run([sys.executable, __file__, "--batch-size", str(args.batch_size),
                                      "--consumers", str(args.consumers), "--child", kind, str(shards_dir)],
                                     capture_output=True, text=True, check=True)
                results[(kind, n)] = json.loads(out.stdout)
    print(f"command: .venv/bin/python bench/loader.py --rows {args.rows} --max-len {args.max_len} "
          f"--batch-size {args.batch_size} --consumers {args.consumers} --row-group {args.row_group}"
          "   (one process, one worker, CPU)")
    print(f"{'loader':<28}{'shards':>7}{'examples/s':>14}{'per CPU-s':>12}{'RSS growth MB':>16}"
          f"{'peak RSS MB':>14}")
    names = {"ours": "trainer.data.ShardStream", "rank": f"ours, rank 0 of {args.consumers}",
             "worker": f"ours, worker 0 of {args.consumers}",
             "peer": "peer: read_table + take", "collate": "collate alone (unpadding)"}
    for (kind, n), r in results.items():
        name = names[kind]
        print(
            f"{name:<28}{n:>7}{r['examples_per_s']:>14,.0f}{r['per_cpu_s']:>12,.0f}{r['rss_growth_mb']:>16.1f}"
            f"{r['peak_rss_mb']:>14.1f}"
        )
    for n in (1, 8):
        ours, peer = results[("ours", n)], results[("peer", n)]
        print(f"{n} shard(s): ours/peer speed {ours['examples_per_s'] / peer['examples_per_s']:.2f}x, "
              f"RSS growth {ours['rss_growth_mb']:.1f} vs {peer['rss_growth_mb']:.1f} MB")
    growth = results[("ours", 8)]["rss_growth_mb"] - results[("ours", 1)]["rss_growth_mb"]
    print(
        f"ours, 8 vs 1 shard files: RSS growth differs by {growth:+.1f} MB; "
        f"target >= 30,000 examples/s: {min(results[('ours', n)]['examples_per_s'] for n in (1, 8)):,.0f}"
    )
    for kind, what in (("rank", "ranks"), ("worker", "DataLoader workers of a rank")):
        ratio = min(results[(kind, n)]["per_cpu_s"] / results[("ours", n)]["per_cpu_s"] for n in (1, 8))
        print(f"one of {args.consumers} {what}, its share: {ratio:.2f}x the examples per CPU-second of a "
              "sole consumer at worst (it decodes every row group its slices fall in)")
    rate, per_cpu = results[("collate", 1)]["examples_per_s"], results[("collate", 1)]["per_cpu_s"]
    print(f"collate alone, length <= {args.max_len}: {rate:,.0f} sequences/s, {per_cpu:,.0f} per CPU-second "
          "(target >= 10,000 per worker at 128)")


if __name__ == "__main__":
    main()
