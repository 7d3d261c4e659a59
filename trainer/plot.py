"""`python -m trainer.plot RUN_DIR [--out FILE.png]`: loss and accuracy curves from RUN_DIR/metrics.jsonl."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from corpusprep.console import refuse_stdout
from corpusprep.engine import storage
from corpusprep.engine.files import atomic_path
from corpusprep.engine.records import parse_json, read_bytes
from corpusprep.errors import DataError, UsageError, printable
from corpusprep.objectives import names, objective
from trainer.command import Command


def read_metrics(path: Path) -> list[dict]:
    """The records of metrics.jsonl; a last line cut short by a kill is left out, any other bad line is a
    DataError naming it."""
    lines = read_bytes(path).splitlines()  # a regular file, of a bounded size; each line decoded alone
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(parse_json(line, path))  # bytes that are not UTF-8 too: a DataError
        except DataError:
            if number < len(lines) or not records:
                raise DataError(f"{path}:{number}: not a JSON record") from None
    return records


# metric prefix (the objective's name: trainer.train) -> title, for objectives with a sentence task
SENTENCE_TASKS = {n: spec.task_title for n in names() if (spec := objective(n)).task_title}


@dataclass
class Curves:
    """The records a figure draws: training (masked-LM loss, means over each record's window of steps) and
    validation (masked-LM loss and accuracy), and how many records it could not use, with the first one's
    line."""

    train: list[dict] = field(default_factory=list)
    validation: list[dict] = field(default_factory=list)
    skipped: int = 0
    first_skipped: int | None = None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


MAX_STEP = 2**53  # a step the trainer can have written (beyond, matplotlib's axis cannot place its ticks)


def _step(value: object) -> bool:
    return _number(value) and 0 <= value <= MAX_STEP


def _value(value: object) -> bool:
    return _number(value) and abs(value) <= 1e30  # a loss or an accuracy: beyond, no axis can be drawn


def curves(records: list) -> Curves:
    """Training records hold a step and `mlm_loss`, validation records a step, `val_mlm_loss` and
    `val_mlm_acc`, all numbers; any other record (another program's, a hand edit) is skipped and counted."""
    config = Curves()
    for line, record in enumerate(records, 1):
        ok = isinstance(record, dict) and _step(record.get("step"))
        if ok and _value(record.get("mlm_loss")):
            config.train.append(record)
        elif ok and _value(record.get("val_mlm_loss")) and _value(record.get("val_mlm_acc")):
            config.validation.append(record)
        else:
            config.skipped += 1
            config.first_skipped = config.first_skipped or line
    return config


def plot(run_dir: Path, out: Path | None = None) -> tuple[Path, Curves]:
    """Write the curves of RUN_DIR/metrics.jsonl as a PNG (default RUN_DIR/curves.png)."""
    import matplotlib.pyplot as plt

    path = run_dir / "metrics.jsonl"
    found = curves(read_metrics(path))
    if not found.train and not found.validation:
        raise DataError(f"{path}: no training or validation record (a step with mlm_loss or val_mlm_loss)")
    fig = figure(found, f"training run {storage.resolve(run_dir).name}")
    out = out or run_dir / "curves.png"
    with atomic_path(out) as tmp:  # a new file renamed into place: never written through a planted link
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    return out, found


def figure(found: Curves | list, title: str):
    """Masked LM in the first column, the sentence task (when the objective has one) in the second: losses
    above (train: each record's mean over its window of steps; validation), validation accuracy below, each
    on its own axis. Beside an MLM loss of ~5-10 the NSP loss (~0.69) would look flat, and so would an MLM
    accuracy rising from 0.05 to 0.15 on the 0-1 axis that NSP's needs; chance is marked for the sentence
    task."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    found = found if isinstance(found, Curves) else curves(found)
    train, val = found.train, found.validation
    task = next((t for t in SENTENCE_TASKS if any(f"{t}_loss" in r for r in train + val)), None)
    columns = [("mlm", "masked LM")] + ([(task, SENTENCE_TASKS[task])] if task else [])
    fig, axes = plt.subplots(2, len(columns), figsize=(5.5 * len(columns), 8), squeeze=False)
    for (prefix, what), (loss, accuracy) in zip(columns, axes.T, strict=True):
        _series(loss, train, f"{prefix}_loss", "train (mean over each logging window)", color="C0", alpha=0.8)
        _series(loss, val, f"val_{prefix}_loss", "validation", **VALIDATION)
        loss.set(xlabel="step", ylabel="cross-entropy (nats)", title=f"{what} loss")
        _series(accuracy, val, f"val_{prefix}_acc", "validation", **VALIDATION)
        accuracy.set(xlabel="step", ylabel="accuracy", title=f"{what} accuracy (validation)")
        if prefix == task:
            loss.axhline(math.log(2), color="grey", linestyle="--", linewidth=1, label="chance (ln 2)")
            accuracy.axhline(0.5, color="grey", linestyle="--", linewidth=1, label="chance (0.5)")
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", framealpha=0.9, fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


VALIDATION = {"color": "C1", "marker": "o", "markersize": 3}  # one colour for validation in every panel


def _series(ax, records: list[dict], key: str, label: str, **style) -> None:
    points = [(r["step"], r[key]) for r in records if _value(r.get(key))]
    if points:
        ax.plot(*zip(*points, strict=True), label=label, **style)


def training_run(path: Path) -> Path:
    """The run dir to plot: `path` itself, or a pipeline run's one training stage (`runs/demo` ->
    `runs/demo/train`, as trainer.export takes it); a UsageError naming the stages when there are several."""
    if storage.is_file(path / "metrics.jsonl"):
        return path
    stages = sorted(p.parent for depth in ("*/", "*/*/") for p in storage.glob(path, f"{depth}metrics.jsonl"))
    if len(stages) == 1:
        return stages[0]
    if stages:
        names = ", ".join(map(str, stages))
        raise UsageError(f"{path}: holds {len(stages)} training runs ({names}); plot one of them")
    raise UsageError(f"{path / 'metrics.jsonl'}: no metrics (not a run dir?)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a trainer run directory (holds metrics.jsonl)")
    parser.add_argument("--out", type=Path, help="PNG path (default: RUN_DIR/curves.png)")


def run(args: argparse.Namespace) -> int:
    refuse_stdout(args.out, "--out", "a PNG image")
    run_dir = training_run(args.run_dir)
    out, found = plot(run_dir, args.out)
    if found.skipped:
        skipped = (f"{run_dir / 'metrics.jsonl'}: skipped {found.skipped} record(s) that are neither "
                   f"training nor validation metrics (first: record {found.first_skipped})")
        print(printable(skipped), file=sys.stderr)
    print(printable(storage.url(out)))
    return 0


CLI = Command("trainer.plot", __doc__, add_arguments, run)
build_parser, main = CLI.parser, CLI.main


if __name__ == "__main__":
    sys.exit(main())
