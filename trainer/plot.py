"""`python -m trainer.plot RUN_DIR [--out FILE.png]`: loss and accuracy curves from RUN_DIR/metrics.jsonl."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_metrics(path: Path) -> list[dict]:
    """The records of metrics.jsonl; a last line cut short by a kill is left out, any other bad line is a
    DataError naming it."""
    from corpusprep.errors import DataError

    lines = path.read_text().splitlines()
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number < len(lines) or not records:
                raise DataError(f"{path}:{number}: not a JSON record") from None
    return records


def plot(run_dir: Path, out: Path | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    records = read_metrics(run_dir / "metrics.jsonl")
    train = [r for r in records if "loss" in r]
    val = [r for r in records if "val_mlm_loss" in r]
    fig, (losses, accuracy) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label, rows in [("mlm_loss", "train MLM", train), ("nsp_loss", "train NSP", train),
                             ("val_mlm_loss", "val MLM", val), ("val_nsp_loss", "val NSP", val)]:  # fmt: skip
        if rows:
            losses.plot([r["step"] for r in rows], [r[key] for r in rows], label=label,
                        marker="o" if key.startswith("val") else None, markersize=3)  # fmt: skip
    for key, label in [("val_mlm_acc", "val MLM accuracy"), ("val_nsp_acc", "val NSP accuracy")]:
        accuracy.plot([r["step"] for r in val], [r[key] for r in val], label=label, marker="o", markersize=3)
    losses.set(xlabel="step", ylabel="cross-entropy", title="loss")
    accuracy.set(xlabel="step", ylabel="accuracy", title="validation accuracy", ylim=(0, 1))
    for ax in (losses, accuracy):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(str(run_dir))
    fig.tight_layout()
    out = out or run_dir / "curves.png"
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trainer.plot", description=__doc__)
    p.add_argument("run_dir", type=Path)
    p.add_argument("--out", type=Path, help="PNG path (default RUN_DIR/curves.png)")
    args = p.parse_args(argv)
    if not (args.run_dir / "metrics.jsonl").is_file():
        print(f"error: {args.run_dir / 'metrics.jsonl'}: no metrics (not a run dir?)", file=sys.stderr)
        return 2
    print(plot(args.run_dir, args.out))
    return 0


if __name__ == "__main__":
    from corpusprep.errors import guarded

    sys.exit(guarded(main))  # an OSError or Ctrl-C: one line, not a traceback
