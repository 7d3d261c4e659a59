"""Every score trainer.evaluate reports, by the field's own scorer (the `eval` extra brings them): seqeval
for entities (its default mode: conlleval's rules, an `I-` after `O` starts an entity), scikit-learn for
accuracy, F1 and Matthews correlation, scipy for Pearson and Spearman correlation, as GLUE's own scorer
(and transformers' `glue_compute_metrics`) does. Scores are plain floats; tests recompute each one from a
run's predictions file with the same libraries.

A constant prediction has no correlation (scipy gives NaN and a warning): it scores 0.0 here, and the run
is reported as collapsed (`TaskKind.collapsed`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any


def accuracy(golds: list, predictions: list) -> float:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(golds, predictions)) if golds else 0.0


def f1(golds: list[str], predictions: list[str], positive: str | None) -> float:
    """Binary F1 of the `positive` label (MRPC and QQP: "1"); macro F1 over the labels when None."""
    from sklearn.metrics import f1_score

    if positive is None:
        return float(f1_score(golds, predictions, average="macro", zero_division=0))
    return float(f1_score(golds, predictions, pos_label=positive, average="binary", zero_division=0))


def matthews(golds: list[str], predictions: list[str]) -> float:
    from sklearn.metrics import matthews_corrcoef

    with warnings.catch_warnings():  # "a single label was found": a constant prediction's 0 is right
        warnings.simplefilter("ignore")
        return float(matthews_corrcoef(golds, predictions))


def _correlation(method: str, golds: list[float], predictions: list[float]) -> float:
    from scipy import stats

    if len(set(predictions)) < 2 or len(set(golds)) < 2:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(getattr(stats, method)(golds, predictions)[0])
    return value if math.isfinite(value) else 0.0


def pearson(golds: list[float], predictions: list[float]) -> float:
    return _correlation("pearsonr", golds, predictions)


def spearman(golds: list[float], predictions: list[float]) -> float:
    return _correlation("spearmanr", golds, predictions)


def entities(golds: list[list[str]], predictions: list[list[str]]) -> dict[str, Any]:
    """Entity-level precision, recall and F1, micro over all entities and per type, by seqeval's default
    mode; "n": the gold entities, per type too."""
    from seqeval.metrics import classification_report

    with warnings.catch_warnings():  # numpy's "mean of empty slice" in the macro average of no entities
        warnings.simplefilter("ignore")
        report = classification_report(golds, predictions, output_dict=True, zero_division=0)
    micro = report.pop("micro avg")
    types = {name: {"precision": float(r["precision"]), "recall": float(r["recall"]),
                    "f1": float(r["f1-score"]), "n": int(r["support"])}
             for name, r in report.items() if not name.endswith(" avg")}
    return {"entity_f1": float(micro["f1-score"]), "entity_precision": float(micro["precision"]),
            "entity_recall": float(micro["recall"]), "n": int(micro["support"]),
            "per_type": types}
