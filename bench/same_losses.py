"""The same training before and after a change: losses, lr, grad norms, validation scores and a digest
of the final weights, from this tree and from git revision REV, in one run; to the last bit, or within
--tolerance (the largest |difference| of any loss, relative to it).

    .venv/bin/python bench/same_losses.py REV [--steps 40] [--objective nsp|sop|none] [--no-dropout]
        [--tolerance 1e-5] [--variants adamw,accum]

Both trees train on the same shards (built once, by this tree's code, from the embedded demo corpus; `none`
packs pieces into rows) with the same seed on CPU: AdamW, and batch 8 x accumulation 2 with a DataLoader
worker; the two trees train at once. REV must differ from this tree only by the change under test (after
merging main, the main that was merged, not the branch point). Used to check that the trainer's refactor into
small parts changed no number (REV 7fdef78: identical), and that unpadding in the loader (issue 25) changed
none beyond float rounding: with dropout on, a new layout draws other dropout masks, so there the two runs are
compared as curves (the mean loss of the last quarter of steps), not step by step.
"""

from __future__ import annotations

import argparse
import json
import math
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
shards, out, steps, names, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
torch.set_num_threads(1)
common = [f'data.shards="{shards}"', 'device="cpu"', f"schedule.steps={steps}", "eval.every=20",
          "eval.max_batches=5", "checkpoint.every=20", "logging.every=5", "seed=3", *extra]
variants = {"adamw": [], "accum": ["data.batch_size=8", "schedule.grad_accum=2", "data.num_workers=1"]}
result = {}
for name, extra in [(n, variants[n]) for n in names.split(",")]:
    run_dir = f"{out}/{name}"
    summary = train(load_config(None, [*common, f'logging.run_dir="{run_dir}"', *extra]))
    records = [json.loads(line) for line in open(f"{run_dir}/metrics.jsonl")]
    for r in records:  # timings differ, numbers must not
        r.pop("seq_per_s", None), r.pop("tokens_per_s", None)
    result[name] = {"weights": summary["weights_sha256"], "metrics": records}
print(json.dumps(result))
"""


def train_in(tree: Path, shards: Path, out: Path, steps: int, variants: str, extra: list[str]):
    """The training runs in `tree`, started in a subprocess; `result` waits for them."""
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-c", RUN, str(shards), str(out), str(steps), variants, *extra]
    return subprocess.Popen(command, cwd=tree, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def result(run: subprocess.Popen) -> dict:
    out, err = run.communicate()
    if run.returncode:
        raise SystemExit(f"a training run failed:\n{err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


def losses(records: list[dict]) -> dict[tuple[int, str], float]:
    return {(r["step"], k): v for r in records for k, v in r.items() if k.endswith("loss")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("rev", help="the git revision to compare with (e.g. the commit before a change)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--objective", choices=["nsp", "sop", "none"], default="nsp")
    p.add_argument("--no-dropout", action="store_true", help="model.dropout = attention_dropout = 0")
    p.add_argument("--tolerance", type=float, default=0.0, help="largest relative loss difference allowed")
    p.add_argument("--variants", default="adamw,accum", help="which runs, comma-separated: adamw, accum")
    args = p.parse_args()
    sys.path.insert(0, str(REPO))
    from tests.trainer.conftest import build_shards

    extra = ["model.dropout=0.0", "model.attention_dropout=0.0"] if args.no_dropout else []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shards = build_shards(tmp / "data", max_mb=0.5, objective=args.objective)
        before = tmp / "before"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(before), args.rev],
                       check=True, capture_output=True)
        try:  # the two trees train at once: half the time, and a shared machine's load falls on both
            runs = [train_in(tree, shards, tmp / f"runs-{name}", args.steps, args.variants, extra)
                    for tree, name in ((before, "before"), (REPO, "after"))]
            old, new = map(result, runs)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(before)], check=True)
    print(f"command: {' '.join(sys.argv)}")
    same = True
    for name in old:
        a, b = losses(old[name]["metrics"]), losses(new[name]["metrics"])
        worst = max(abs(b[k] - a[k]) / max(abs(a[k]), 1e-12) for k in a) if a.keys() == b.keys() else math.inf
        train = sorted(k for k in a if k[1] == "loss")
        tail = train[len(train) * 3 // 4 :]
        mean = [sum(d[k] for k in tail) / len(tail) for d in (a, b)]
        weights = old[name]["weights"] == new[name]["weights"]
        identical = weights and old[name]["metrics"] == new[name]["metrics"]
        ok = worst <= args.tolerance if args.tolerance else identical
        same &= ok
        print(f"{name:<6} {len(a)} losses over {args.steps} steps: largest relative difference {worst:.1e}; "
              f"mean train loss, last quarter {mean[0]:.4f} -> {mean[1]:.4f}; weights "
              f"{'identical' if weights else 'differ'}: {'same' if ok else 'DIFFER'}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
