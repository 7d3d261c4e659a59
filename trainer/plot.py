"""`python -m trainer.plot RUN_DIR [--out FILE.png]`: loss and accuracy curves from RUN_DIR/metrics.jsonl."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from corpusprep.errors import OneLineParser, printable


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
    """Write the curves of RUN_DIR/metrics.jsonl as a PNG (default RUN_DIR/curves.png)."""
    import matplotlib.pyplot as plt

    records = read_metrics(run_dir / "metrics.jsonl")
    fig = figure(records, f"training run {run_dir.resolve().name}")
    out = out or run_dir / "curves.png"
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


SENTENCE_TASKS = {"nsp": "next-sentence", "sop": "sentence-order"}  # metric prefix -> title


def figure(records: list[dict], title: str):
    """Masked-LM loss, the sentence task's loss when the objective has one (its own axis: ~0.69 beside an
    MLM loss of ~5-10, it would look flat) and validation accuracy, each with train and validation curves."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    train = [r for r in records if "loss" in r]
    val = [r for r in records if "val_mlm_loss" in r]
    task = next((t for t in SENTENCE_TASKS if any(f"{t}_loss" in r for r in records)), None)
    losses = [("mlm_loss", "masked LM")] + ([(f"{task}_loss", SENTENCE_TASKS[task])] if task else [])
    fig, axes = plt.subplots(1, len(losses) + 1, figsize=(5 * (len(losses) + 1), 4.2))
    for ax, (key, what) in zip(axes, losses, strict=False):
        if train:
            ax.plot([r["step"] for r in train], [r[key] for r in train], label="train", alpha=0.8)
        if val:
            ax.plot([r["step"] for r in val], [r["val_" + key] for r in val], label="validation",
                    marker="o", markersize=3)  # fmt: skip
        ax.set(xlabel="step", ylabel="cross-entropy (nats)", title=f"{what} loss")
    accuracy = axes[-1]
    accuracies = [("val_mlm_acc", "masked LM")]
    if task:
        axes[1].axhline(math.log(2), color="grey", linestyle="--", linewidth=1, label="chance (ln 2)")
        accuracies.append((f"val_{task}_acc", SENTENCE_TASKS[task].replace("-", " ")))
        accuracy.axhline(0.5, color="grey", linestyle="--", linewidth=1, label=f"{task.upper()} chance")
    for key, label in accuracies:
        accuracy.plot([r["step"] for r in val], [r[key] for r in val], label=label, marker="o", markersize=3)
    accuracy.set(xlabel="step", ylabel="accuracy", title="validation accuracy", ylim=(0, 1))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(loc="best", framealpha=0.9, fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m trainer.plot", description=__doc__)
    p.add_argument("run_dir", type=Path, help="a trainer run directory (holds metrics.jsonl)")
    p.add_argument("--out", type=Path, help="PNG path (default: RUN_DIR/curves.png)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not (args.run_dir / "metrics.jsonl").is_file():
        missing = printable(f"{args.run_dir / 'metrics.jsonl'}")
        print(f"error: {missing}: no metrics (not a run dir?)", file=sys.stderr)
        return 2
    print(plot(args.run_dir, args.out))
    return 0


if __name__ == "__main__":
    from corpusprep.errors import guarded

    sys.exit(guarded(main))  # an OSError or Ctrl-C: one line, not a traceback
