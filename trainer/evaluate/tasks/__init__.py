"""The task kinds of trainer.evaluate: one module each (`tasks/base.py` says what a kind is), registered here.

    tag         token tagging (UD's UPOS...): word accuracy              CoNLL-U, CoNLL-style columns
    ner         named entities: entity-level P/R/F1 (seqeval)           CoNLL-2003, IOB2 (UNER, WikiANN)
    classify    sentence (pair) classification: accuracy, F1, Matthews  TSV, CSV, JSONL (GLUE's layouts)
    regression  sentence (pair) scores: Pearson, Spearman (STS-B)       TSV, CSV, JSONL
    qa          extractive QA: F1, exact match (official SQuAD rules)   SQuAD v1.1/v2.0 JSON

Adding a kind: a module with `KIND = ...` (a `TaskKind` subclass), one line in REGISTRY and, when `auto`
should pick it for a format, one in AUTO. Stdlib-only here: a kind's module is imported on first use.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from corpusprep.errors import UsageError

REGISTRY = {  # name -> module holding its KIND
    "tag": "trainer.evaluate.tasks.tag",
    "ner": "trainer.evaluate.tasks.ner",
    "classify": "trainer.evaluate.tasks.classify",
    "regression": "trainer.evaluate.tasks.regression",
    "qa": "trainer.evaluate.tasks.qa",
}
AUTO = {"conllu": "tag", "conll": "ner", "tsv": "classify", "csv": "classify", "jsonl": "classify",
        "squad": "qa"}
TASKS = ("auto", *REGISTRY)
# every metric a kind reports (--metric NAME chooses the headline among its kind's)
METRICS = ("accuracy", "f1", "matthews", "pearson", "spearman", "entity_f1", "exact_match")


def task_kind(name: str) -> Any:  # a tasks.base.TaskKind (not imported here: it reads data.py)
    if name not in REGISTRY:
        raise UsageError(f"unknown task {name!r} (choose from {', '.join(REGISTRY)})")
    return importlib.import_module(REGISTRY[name]).KIND


def choose_kind(name: str, fmt: str, train: Path) -> Any:
    """The kind `--task` names, or the one `auto` picks for the training file's format (`scores` may turn
    a table's classification into regression once its labels are read)."""
    kind = task_kind(AUTO[fmt] if name == "auto" else name)
    if fmt not in kind.formats:
        raise UsageError(f"--task {kind.name}: {train} is a {fmt} file; {kind.name} reads "
                         f"{', '.join(kind.formats)}")
    return kind


def scores(labels: list[str]) -> bool:
    """Labels that are scores, not classes (`auto` makes such a table a regression task): all numbers, some
    with a decimal point, more than 10 values (STS-B's 0.000 to 5.000)."""
    try:
        [float(label) for label in labels]
    except ValueError:
        return False
    return any("." in label for label in labels) and len(set(labels)) > 10


def headline(kind: Any, metric: str | None) -> str:
    """The metric reported first, chosen on and judged by: `--metric`, else the kind's first."""
    if metric is None:
        return kind.metrics[0]
    if metric not in kind.metrics:
        raise UsageError(f"--metric {metric}: {kind.name} reports {', '.join(kind.metrics)}")
    return metric
