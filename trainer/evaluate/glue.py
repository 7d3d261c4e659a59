"""GLUE in one command: every task of a directory laid out as GLUE's download is (`CoLA/train.tsv`,
`CoLA/dev.tsv`, ..., `MNLI/dev_matched.tsv` and `dev_mismatched.tsv`), each evaluated as `python -m
trainer.evaluate` does (the pre-trained model beside a random init, the same seeds, the epoch chosen on
dev, the median over seeds), then one table like Table 1 of Devlin et al. 2019:

    python -m trainer.evaluate MODEL --glue glue_data/ [-o OUT] [--glue-tasks RTE,MRPC] [options]

Each task is read in GLUE's own format with its official metric (Wang et al. 2019): CoLA Matthews
correlation (GLUE's files have no header: source, label, mark, sentence; a two-column copy, sentence and
label, is read too); SST-2, QNLI, RTE and MNLI accuracy (MNLI matched and mismatched: the epoch is chosen on
matched, mismatched is scored once with it); MRPC and QQP F1 of the positive class and accuracy; STS-B
Pearson and Spearman correlation of a regression head. The table's cell is the metric Table 1 reports (F1
for MRPC and QQP, Spearman for STS-B), as a percentage, the median over seeds; the average is over the
columns present, and the published BERT rows (for a model of BERT's shape) are averaged over the same
columns. WNLI is left out, as BERT's Table 1 average and Cramming's GLUE-sane do: its train and dev sets
share sentences with opposite labels, so that fine-tuned models score below the majority class.

With `-o OUT` each task is an evaluation directory `OUT/TASK/` (an artifact: a rerun does nothing and
prints the table again; a stopped one resumes after its last finished run).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.errors import UsageError
from trainer.evaluate import published
from trainer.evaluate.data import head_lines
from trainer.evaluate.settings import EvalSettings

LEFT_OUT = "WNLI"


@dataclass(frozen=True)
class GlueTask:
    name: str  # the directory, as GLUE's download names it
    benchmark: str  # published.PUBLISHED's key
    kind: str  # classify | regression
    metric: str  # Table 1's, chosen on dev
    dev: str = "dev.tsv"
    second: str | None = None  # a second dev set, scored once with the epoch chosen on the first (MNLI)
    columns: str = ""  # the second column's header in Table 1 (MNLI-mm)


TASKS = (
    GlueTask("MNLI", "mnli-m", "classify", "accuracy", "dev_matched.tsv", "dev_mismatched.tsv", "MNLI-mm"),
    GlueTask("QQP", "qqp", "classify", "f1"),
    GlueTask("QNLI", "qnli", "classify", "accuracy"),
    GlueTask("SST-2", "sst-2", "classify", "accuracy"),
    GlueTask("CoLA", "cola", "classify", "matthews"),
    GlueTask("STS-B", "sts-b", "regression", "spearman"),
    GlueTask("MRPC", "mrpc", "classify", "f1"),
    GlueTask("RTE", "rte", "classify", "accuracy"),
)  # Table 1's order
BY_NAME = {t.name.lower(): t for t in TASKS}


def find(directory: Path, name: str) -> Path | None:
    """`name` in `directory`, or a compressed copy of it (`train.tsv.xz`)."""
    found = sorted(storage.glob(directory, f"{name}*"))
    return next((p for p in found if p.name == name), found[0] if found else None)


def cola_columns(path: Path) -> dict[str, Any]:
    """CoLA has no header: GLUE's four columns (source, label, mark, sentence), or sentence and label."""
    first = next((line for line in head_lines(path, 5) if line.strip()), "")
    text, label = ("1", "2") if len(first.split("\t")) == 2 else ("4", "2")
    return {"header": False, "text_column": text, "label_column": label}


def settings_for(task: GlueTask, directory: Path, base: EvalSettings) -> EvalSettings | None:
    """The evaluation of one task, or None when its files are not in `directory`."""
    folder = directory / task.name
    train, dev = find(folder, "train.tsv"), find(folder, task.dev)
    if train is None or dev is None:
        return None
    second = find(folder, task.second) if task.second else None
    columns = cola_columns(train) if task.name == "CoLA" else {}
    return replace(base, train=str(train), dev=str(dev), test=str(second) if second else None,
                   task=task.kind, format="tsv", metric=task.metric, benchmark=task.benchmark,
                   **columns)


def chosen(names: str | None) -> list[GlueTask]:
    if not names:
        return list(TASKS)
    wanted = [n.strip().lower() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in BY_NAME]
    if unknown:
        left = " (left out of the suite: see trainer/evaluate/glue.py)" if LEFT_OUT.lower() in unknown else ""
        raise UsageError(f"--glue-tasks {unknown[0]}: one of {', '.join(t.name for t in TASKS)}{left}")
    return [BY_NAME[n] for n in wanted]


def run_suite(source: str | Path, directory: str | Path, base: EvalSettings, out: str | Path | None,
              names: str | None = None, **options) -> dict[str, Any]:
    """Evaluate every task present; returns {"tasks": {name: evaluation result}, "skipped": [names]}."""
    from trainer.evaluate.compare import evaluate, log

    directory = Path(directory)
    if not storage.is_dir(directory):
        raise UsageError(f"{storage.url(directory)}: not a directory (GLUE's layout: TASK/train.tsv, "
                         "TASK/dev.tsv)")
    todo = {t.name: settings_for(t, directory, base) for t in chosen(names)}
    missing = [name for name, s in todo.items() if s is None]
    present = {name: s for name, s in todo.items() if s is not None}
    if not present:
        raise UsageError(f"{directory}: no GLUE task (TASK/train.tsv and TASK/dev.tsv for TASK in "
                         f"{', '.join(t.name for t in TASKS)})")
    for settings in present.values():  # every setting checked before the first run
        settings.check()
    results = {}
    for name, settings in present.items():
        log(f"GLUE {name}:")
        results[name] = evaluate(source, settings, Path(out) / name if out is not None else None, **options)
    return {"tasks": results, "missing": missing}


# ---------------------------------------------------------------- the table


def _columns(results: dict[str, dict]) -> list[tuple[str, str, str]]:
    """(header, task, split) of each column, in Table 1's order."""
    columns = []
    for task in TASKS:
        if task.name in results:
            columns.append((f"{task.name}-m" if task.second else task.name, task.name, "dev"))
            if task.second and "test" in results[task.name]["splits"]:
                columns.append((task.columns, task.name, "test"))
    return columns


def _value(results: dict, task: str, split: str, key: str) -> float:
    scores = results[task]["splits"][split]
    if key == "baseline":
        return scores["baseline"]
    return scores[key]["median"]


def table(suite: dict[str, Any]) -> str:
    """Table 1 of the suite: a row per model (medians over seeds, as percentages), the gain, the cheap
    baselines and the published BERT rows of the model's shape, each with the average over its columns."""
    results = suite["tasks"]
    columns = _columns(results)
    head = "| GLUE dev | " + " | ".join(header for header, _, _ in columns) + " | Average |"
    lines = [head, "|---|" + "---:|" * (len(columns) + 1)]
    for key, name in (("pretrained", "pre-trained"), ("random", "random init"), ("gain", "gain"),
                      ("baseline", "baseline (majority class; word overlap for STS-B)")):
        values = [_value(results, task, split, key) for _, task, split in columns]
        sign = "+" if key == "gain" else ""
        cells = [f"{100 * v:{sign}.1f}" for v in values] + [f"{100 * statistics.fmean(values):{sign}.1f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [row for size in ("base", "large") if (row := _published_row(columns, results, size))]
    seeds = len(next(iter(results.values()))["seeds"])
    notes = [f"Medians over {seeds} seeds of each model's dev score, as percentages: F1 for QQP and MRPC, "
             "Spearman for STS-B, Matthews for CoLA, accuracy for the others (Table 1's metrics); the epoch "
             "is chosen on dev (MNLI: on matched). The average is over the columns shown. WNLI is left out "
             "(as BERT's Table 1 average and Cramming's GLUE-sane). The gain is the median of each seed's "
             "difference (both models fine-tuned with that seed), so it need not be the difference of the "
             "two medians above it, nor have its sign."]
    if suite.get("missing"):
        notes.append(f"Not in the directory: {', '.join(suite['missing'])}.")
    verdicts = [f"- {header}: {results[task]['splits'][split]['verdict']}" for header, task, split in columns]
    return "\n".join([*lines, "", *notes, "", *verdicts]) + "\n"


def _published_row(columns: list, results: dict, size: str) -> str | None:
    """The published BERT row of `size` (Table 1, GLUE test server) over the same columns, when the model
    has that shape (the evaluations carry their published figures)."""
    values = []
    for _, task, split in columns:
        rows = results[task]["splits"][split].get("published", [])
        match = [r for r in rows if r["name"].startswith(f"BERT-{size} ")]
        if not match:
            return None
        values.append(match[0]["value"])
    cells = [f"{100 * v:.1f}" for v in values] + [f"{100 * statistics.fmean(values):.1f}"]
    return f"| BERT-{size} (published, not measured: {published.SOURCE}, GLUE test server) | " + \
        " | ".join(cells) + " |"
