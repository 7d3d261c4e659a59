"""What the checkpoint format without pickle costs: save and load of a model with its AdamW state, in this
format (safetensors + JSON, every file's sha256 written at save and checked at load) against torch.save /
torch.load of the same state dicts (the pickled format before it), in one run, as ratios.

    .venv/bin/python bench/checkpoint_format.py [--preset base] [--repeats 3]

CPU only; the times include fsync of every file. Best of `--repeats`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch

from trainer import checkpoint
from trainer.config import preset
from trainer.model import BertForPreTraining


def states(name: str) -> dict:
    """A model and an AdamW optimizer after one step (its state allocated), a schedule, a trainer state."""
    torch.manual_seed(0)
    model = BertForPreTraining(preset(name, vocab_size=30522))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for p in model.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    optimizer.step()
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    trainer = {"step": 1, "positions": [{"batches": 1, "rows": [32]}], "last_metrics": {},
               "rng": [{"cpu": torch.get_rng_state(), "cuda": None}]}
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": schedule.state_dict(), "trainer": trainer}


def pickled_save(directory: Path, state: dict) -> None:
    directory.mkdir()
    for name, value in state.items():
        with open(directory / f"{name}.pt", "wb") as f:
            torch.save(value, f)
            f.flush()
            os.fsync(f.fileno())


def pickled_load(directory: Path) -> None:
    for name in ("model", "optimizer", "scheduler", "trainer"):
        torch.load(directory / f"{name}.pt", weights_only=False)  # what the trainer did before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    state = states(args.preset)
    root = Path(tempfile.mkdtemp())
    times: dict[str, list[float]] = {}

    def timed(key: str, call) -> object:
        started = time.perf_counter()
        result = call()
        times.setdefault(key, []).append(time.perf_counter() - started)
        return result

    try:
        for repeat in range(args.repeats):
            path = timed("save", lambda: checkpoint.save(root / "new", 1, state, {"model": {}}, keep=1))
            timed("load", lambda: (checkpoint.load_weights(path), checkpoint.load_state(path)))  # noqa: B023
            old = root / f"old-{repeat}"
            timed("save (pickle)", lambda: pickled_save(old, state))  # noqa: B023
            timed("load (pickle)", lambda: pickled_load(old))  # noqa: B023
        size = sum(f.stat().st_size for f in path.iterdir())
        pickled = sum(f.stat().st_size for f in (root / "old-0").iterdir())
    finally:
        shutil.rmtree(root)
    best = {k: min(v) for k, v in times.items()}
    print(f"{args.preset}: {size / 1e6:,.0f} MB (pickled: {pickled / 1e6:,.0f} MB)")
    for what in ("save", "load"):
        print(f"{what}: {best[what]:.2f} s, pickled {best[what + ' (pickle)']:.2f} s, "
              f"ratio {best[what] / best[what + ' (pickle)']:.2f}")


if __name__ == "__main__":
    main()
