"""Shards on an object store vs local disk, in one run (issue 24), against a local S3 server (moto's, on
127.0.0.1; `pip install '.[test]'` brings it and s3fs):

1. The loader alone: examples/s of one process reading one epoch of a shard directory through
   `trainer.data.ShardStream` (no model), from local disk, from S3 with a cold cache (every shard fetched
   through `trainer/cache.py`, verified against the manifest's sha256, prefetched 2 ahead), and from S3 with
   the cache warm (a new process: each cached shard hashed once before its first use, nothing fetched).
   Synthetic rows in the shard schema (bench/loader.py's), `--rows` of length <= 128, 8 shards, row groups
   of 256 as `corpusprep shard` writes them.
2. The data wait: the trainer (tiny preset, CPU, batch 32) training `--steps` steps from the same shards on
   S3 with a cold cache, its time inside `next(batches)` (waiting for the next batch: a shard's fetch, the
   row group's decoding) against its step time; with the cache's prefetch on (2 shards ahead, the default)
   and off, and from local disk. The order visits chunks of every shard from the first steps, so the cold
   cache fetches most shards during the run. The first step (its shard cannot be prefetched) is reported
   apart.

    .venv/bin/python bench/shard_store.py                 # ~4 minutes on 2 shared cores
    .venv/bin/python bench/shard_store.py --rows 50000 --steps 20

Each measurement runs in a fresh subprocess (its own cache object, no warm imports). moto is a Python server
on this machine: its bandwidth and latency are not S3's; what the numbers show is the cost the cache and
its checks add over local disk, and whether the prefetch hides a fetch behind training.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BUCKET = "bench-shard-store"


def start_s3() -> object:
    """moto's S3 server on a free port of 127.0.0.1, with the settings botocore reads set for this process
    and its children, and one bucket."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull})
    import s3fs

    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(BUCKET)
    return server


def upload(local: Path, name: str) -> str:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        fs.put_file(str(path), f"{BUCKET}/{name}/{path.relative_to(local).as_posix()}")
    return f"s3://{BUCKET}/{name}"


def child(kind: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, *args], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{kind} {args}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


# ---------------------------------------------------------------- in the subprocesses


def loader_epoch(shards: str, cache_dir: str) -> dict:
    """One epoch of ShardStream, one process, from `shards` (a directory or a URL); the start (imports,
    opening the shards: the manifest, on S3 the client) timed apart."""
    start = time.perf_counter()
    from trainer.cache import ShardCache
    from trainer.config import DataConfig
    from trainer.data import ShardStream
    from trainer.shards import open_shards

    cache = ShardCache(cache_dir, max_bytes=8 << 30, ahead=2)
    opened = open_shards(shards, cache=cache) if "://" in shards else open_shards(shards)
    stream = ShardStream(opened, "train", DataConfig(batch_size=256), seed=0, loop=False)
    opening, cpu = time.perf_counter() - start, time.process_time()
    start = time.perf_counter()
    seen = sum(len(batch["rows"]) for batch in stream.worker_batches(0, 1))
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    cache.close()
    return {"examples": seen, "seconds": seconds, "open_seconds": opening, "examples_per_s": seen / seconds,
            "per_cpu_s": seen / cpu_seconds, "fetched": cache.fetched}


def training_wait(shards: str, cache_dir: str, prefetch: str, steps: str, run_dir: str) -> dict:
    """`steps` trainer steps; the time inside next(batches) and the step times, per step."""
    import torch

    from trainer.config import load_config
    from trainer.dist import Dist
    from trainer.train import Trainer

    torch.set_num_threads(1)
    settings = [f"data.shards={json.dumps(shards)}", f"logging.run_dir={json.dumps(run_dir)}",
                "model.preset=\"tiny\"", "device=\"cpu\"", "data.batch_size=32", f"schedule.steps={steps}",
                "eval.every=0", "checkpoint.every=100000", f"data.cache_dir={json.dumps(cache_dir)}",
                f"data.prefetch_shards={prefetch}", "logging.every=100000"]
    trainer = Trainer(load_config(None, settings), Dist(), torch.device("cpu"))
    batches, waits = trainer.batches, []

    def timed():
        while True:
            started = time.perf_counter()
            batch = next(batches)
            waits.append(time.perf_counter() - started)
            yield batch

    trainer.batches = timed()
    step_times = []
    for _ in range(int(steps)):
        started = time.perf_counter()
        trainer.train_step()
        step_times.append(time.perf_counter() - started)
    fetched = len(list(Path(cache_dir).glob("*/*.parquet")))  # in the cache's folder: fetched by this run
    return {"waits": waits, "steps": step_times, "fetched": fetched}


# ---------------------------------------------------------------- the parent


def loader_table(local: Path, url: str, tmp: Path) -> dict[str, dict]:
    cache = tmp / "cache-loader"
    return {"local disk": child("loader", str(local), str(tmp / "unused")),
            "S3, cold cache": child("loader", url, str(cache)),
            "S3, warm cache": child("loader", url, str(cache))}


def wait_table(local: Path, url: str, tmp: Path, steps: int) -> dict[str, dict]:
    runs = {"local disk": (str(local), "2"), "S3, cold cache, prefetch 2": (url, "2"),
            "S3, cold cache, no prefetch": (url, "0")}
    return {name: child("train", shards, str(tmp / f"cache-train-{i}"), prefetch, str(steps),
                        str(tmp / f"run-{i}"))
            for i, (name, (shards, prefetch)) in enumerate(runs.items())}


def report(args: argparse.Namespace, loader: dict, waits: dict, megabytes: float) -> None:
    print(f"command: .venv/bin/python bench/shard_store.py --rows {args.rows} --steps {args.steps}")
    print(f"\n1. loader, one process, one epoch of {loader['local disk']['examples']:,} examples (8 shards, "
          f"{megabytes:.0f} MB)")
    print(f"{'source':<20}{'start s':>8}{'epoch s':>9}{'examples/s':>12}{'per CPU-s':>12}{'fetched':>9}"
          f"{'vs disk':>9}")
    base = loader["local disk"]["examples_per_s"]
    for name, r in loader.items():
        print(f"{name:<20}{r['open_seconds']:>8.2f}{r['seconds']:>9.2f}{r['examples_per_s']:>12,.0f}"
              f"{r['per_cpu_s']:>12,.0f}{r['fetched']:>9}{r['examples_per_s'] / base:>8.2f}x")
    print(f"\n2. data wait, tiny preset, CPU, batch 32, {args.steps} steps, the same shards")
    print(f"{'source':<30}{'first step s':>13}{'wait s (rest)':>14}{'step s (rest)':>14}{'wait share':>11}"
          f"{'worst wait ms':>14}{'fetched':>9}")
    for name, r in waits.items():
        wait, step = sum(r["waits"][1:]), sum(r["steps"][1:])
        print(f"{name:<30}{r['steps'][0]:>13.2f}{wait:>14.3f}{step:>14.2f}{wait / step:>10.2%}"
              f"{max(r['waits'][1:]) * 1000:>14.1f}{r['fetched'] if 'S3' in name else 0:>9}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200_000, help="synthetic rows for the loader table")
    p.add_argument("--steps", type=int, default=40, help="trainer steps for the data-wait table")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        kind, *rest = args.child
        print(json.dumps(loader_epoch(*rest) if kind == "loader" else training_wait(*rest)))
        return
    server = start_s3()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            from bench.loader import synthetic_split, write_shards

            local = write_shards(synthetic_split(args.rows, 128), Path(tmp) / "shards", 8, row_group=256)
            megabytes = sum(p.stat().st_size for p in local.rglob("*.parquet")) / 1e6
            url = upload(local, "shards")
            loader = loader_table(local, url, Path(tmp))
            waits = wait_table(local, url, Path(tmp), args.steps)
    finally:
        server.stop()
    report(args, loader, waits, megabytes)


if __name__ == "__main__":
    main()
