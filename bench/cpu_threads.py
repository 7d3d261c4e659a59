"""CPU training on a shared machine: the CPU recipe's training (tiny preset, packed rows of 64, batch 64,
no dropout) alone and beside 1 and 2 busy single-threaded processes, under the old thread policy (torch's
defaults: a team as wide as the machine, OpenMP's default spin-then-sleep waiting) and the new one
(`trainer.threads`: passive waiting, the team as wide as the cores this process may use), in one run.

    .venv/bin/python bench/cpu_threads.py                    # on an otherwise idle machine (~6 minutes)
    .venv/bin/python bench/cpu_threads.py --quick            # a dry run (~1 minute)

Each measurement is a fresh interpreter (OpenMP reads its environment when torch loads it) that trains
--warmup steps, then as many as fit in --seconds, and prints sequences/s; the busy processes (`while True:
pass`) start before it and stop after. Read the ratios: to the same policy alone (what a busy core costs:
about its share, 1/2 of a 2-core machine, is the goal) and new over old.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

POLICIES = ("old", "new")
# the CPU recipe's data and training (pipelines/cpu-recipe.toml) on the demo corpus
DATA = ["pairs.objective='none'", "pairs.pack=true", "pairs.max_seq_length=64", "pairs.dupe_factor=1",
        "shard.max_predictions_per_seq=10", "shard.num_shards=2"]
TRAIN = {"model": {"preset": "tiny", "dropout": 0.0, "attention_dropout": 0.0}, "data": {"batch_size": 64},
         "optim": {"lr": 1e-3}, "schedule": {"steps": 10**6}, "eval": {"every": 0}, "device": "cpu",
         "seed": 12345}
OPENMP = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def build_shards(root: Path, mb: float) -> Path:
    """Shards of the demo corpus with the CPU recipe's data settings (`corpusprep run --until shard`)."""
    from corpusprep.engine.stage import RunContext
    from pipelines.load import load_pipeline
    from pipelines.runner import run_pipeline

    pipeline = load_pipeline(REPO / "pipelines" / "demo.toml", [f"input.demo_mb={mb}", *DATA])
    run_pipeline(pipeline, root / "data", until="shard", context=RunContext(progress=False))
    return root / "data" / "shards"


def worker(policy: str, shards: str, warmup: int, seconds: float) -> None:
    """One measurement, in this fresh process: train, print {"threads", "sequences_per_s"} as JSON."""
    if policy == "new":
        from trainer import threads

        threads.configure(1)
    import torch

    from trainer.config import load_config
    from trainer.train import Dist, Trainer

    with tempfile.TemporaryDirectory() as run_dir:
        config = load_config({**TRAIN, "data": {**TRAIN["data"], "shards": shards},
                              "logging": {"run_dir": run_dir, "every": 10**6}})
        trainer = Trainer(config, Dist(), torch.device("cpu"))
        trainer.model.train()
        for _ in range(warmup):
            trainer.train_step()
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds or steps < 3:
            trainer.train_step()
            steps += 1
    rate = steps * config.data.batch_size / elapsed
    print(json.dumps({"threads": torch.get_num_threads(), "sequences_per_s": rate}))


def measure(policy: str, busy: int, shards: Path, args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in OPENMP}  # each policy's own choice
    env["PYTHONPATH"] = str(REPO)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        time.sleep(0.5 if busy else 0)  # running before the trainer starts
        done = subprocess.run([sys.executable, __file__, "--worker", policy, "--shards", str(shards),
                               "--warmup", str(args.warmup), "--seconds", str(args.seconds)],
                              capture_output=True, text=True, env=env, check=False)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    if done.returncode != 0:
        raise SystemExit(f"worker {policy} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2], help="competing busy processes")
    p.add_argument("--seconds", type=float, default=15.0, help="measured training time per cell")
    p.add_argument("--warmup", type=int, default=5, help="steps before the clock starts")
    p.add_argument("--repeat", type=int, default=2, help="measurements per cell (the median is shown)")
    p.add_argument("--mb", type=float, default=2.0, help="demo corpus size for the shards")
    p.add_argument("--quick", action="store_true", help="a dry run: 3 s cells, one each, a small corpus")
    p.add_argument("--worker", choices=POLICIES, help=argparse.SUPPRESS)
    p.add_argument("--shards", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.shards, args.warmup, args.seconds)
        return
    if args.quick:
        args.seconds, args.repeat, args.mb, args.warmup = 3.0, 1, 0.5, 2
    from trainer.threads import available_cores

    load = os.getloadavg()[0]
    print(f"{available_cores()} core(s) available, load average {load:.2f} before the run"
          f"{' (not idle: read the ratios with care)' if load > 0.5 else ''}")
    with tempfile.TemporaryDirectory() as tmp:
        shards = build_shards(Path(tmp), args.mb)
        cells: dict[tuple[str, int], dict] = {}
        for busy in args.busy:
            for policy in POLICIES:  # side by side, so a change of load falls on both alike
                runs = [measure(policy, busy, shards, args) for _ in range(args.repeat)]
                rate = statistics.median(r["sequences_per_s"] for r in runs)
                cells[policy, busy] = {"threads": runs[0]["threads"], "rate": rate}
                print(f"  {policy}, {busy} busy: {rate:,.1f} sequences/s ({runs[0]['threads']} threads)",
                      flush=True)
    threads = {pol: cells[pol, args.busy[0]]["threads"] for pol in POLICIES}
    print(f"\n| busy processes | old ({threads['old']} threads): seq/s | new ({threads['new']} threads): "
          "seq/s | new / old | old / old alone | new / new alone |")
    print("|---:|---:|---:|---:|---:|---:|")
    for busy in args.busy:
        rate = {pol: cells[pol, busy]["rate"] for pol in POLICIES}
        alone = [f"{rate[pol] / cells[pol, 0]['rate']:.2f}" if (pol, 0) in cells else "" for pol in POLICIES]
        print(f"| {busy} | {rate['old']:,.1f} | {rate['new']:,.1f} | {rate['new'] / rate['old']:.2f}x | "
              f"{alone[0]} | {alone[1]} |")

if __name__ == "__main__":
    main()
