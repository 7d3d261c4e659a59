"""The same NSP training before and after a change, to the last bit: losses, lr, grad norms, validation
scores and a digest of the final weights, from this tree and from git revision REV, in one run.

    .venv/bin/python bench/same_losses.py REV [--steps 40]

Both trees train on the same shards (built once, by this tree's code, from the embedded demo corpus) with
the same seed on CPU: AdamW with dropout on, and batch 8 x accumulation 2 with a DataLoader worker. Used to
check that the trainer's refactor into small parts changed no number (REV 7fdef78: identical).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN = """
import json, sys
import torch
from trainer.config import load_config
from trainer.train import train
shards, out, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(1)
common = [f'data.shards="{shards}"', 'device="cpu"', f"schedule.steps={steps}", "eval.every=20",
          "eval.max_batches=5", "checkpoint.every=20", "logging.every=5", "seed=3"]
variants = {"adamw": [], "accum": ["data.batch_size=8", "schedule.grad_accum=2", "data.num_workers=1"]}
result = {}
for name, extra in variants.items():
    run_dir = f"{out}/{name}"
    summary = train(load_config(None, [*common, f'logging.run_dir="{run_dir}"', *extra]))
    records = [json.loads(line) for line in open(f"{run_dir}/metrics.jsonl")]
    for r in records:  # timings differ, numbers must not
        r.pop("seq_per_s", None), r.pop("tokens_per_s", None)
    result[name] = {"weights": summary["weights_sha256"], "metrics": records}
print(json.dumps(result))
"""


def train_in(tree: Path, shards: Path, out: Path, steps: int) -> dict:
    done = subprocess.run([sys.executable, "-c", RUN, str(shards), str(out), str(steps)], cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("rev", help="the git revision to compare with (e.g. the commit before a change)")
    p.add_argument("--steps", type=int, default=40)
    args = p.parse_args()
    sys.path.insert(0, str(REPO))
    from tests.trainer.conftest import build_shards

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shards = build_shards(tmp / "data", max_mb=0.5)
        before = tmp / "before"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(before), args.rev],
                       check=True, capture_output=True)  # fmt: skip
        try:
            old = train_in(before, shards, tmp / "runs-before", args.steps)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(before)], check=True)
        new = train_in(REPO, shards, tmp / "runs-after", args.steps)
    print(f"command: {' '.join(sys.argv)}")
    same = True
    for name in old:
        weights = old[name]["weights"] == new[name]["weights"]
        metrics = old[name]["metrics"] == new[name]["metrics"]
        same &= weights and metrics
        verdict = {True: "identical", False: "DIFFER"}
        print(f"{name:<6} {len(new[name]['metrics'])} records: metrics {verdict[metrics]}, weights "
              f"{verdict[weights]} ({new[name]['weights'][:16]})")  # fmt: skip
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
