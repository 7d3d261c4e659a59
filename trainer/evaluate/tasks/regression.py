"""Sentence (pair) regression (GLUE's STS-B: a similarity score from 0 to 5): a number per row, predicted by a
one-output head trained with mean squared error (transformers' `BertForSequenceClassification` with
`num_labels=1`, as BERT did for STS-B), scored by Pearson and Spearman correlation (GLUE's metrics).

Baseline: for pairs, the word overlap of the two texts (Jaccard similarity of their lower-cased word sets,
the classic cheap STS baseline); for single texts, the training mean (which correlates with nothing: 0).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from corpusprep.errors import DataError
from trainer.evaluate import metrics
from trainer.evaluate.data import Faults, Row, Split, TaskData
from trainer.evaluate.tasks.base import Encoded
from trainer.evaluate.tasks.classify import Classify, encode_rows


def number(label: str) -> float | None:
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class Regression(Classify):
    name = "regression"
    title = "regression"
    metrics = ("pearson", "spearman")
    baseline_name = "word overlap"

    def label_set(self, train: Split, settings) -> tuple[str, ...]:
        faults = Faults(Path(train.path), settings.on_error, train.skips)
        self.check_numbers(train, faults)
        if not train.examples:
            raise DataError(f"{train.path}: no examples")
        if len({r.label for r in train.examples}) < 2:
            raise DataError(f"{train.path}: every score is {train.examples[0].label}; nothing to learn")
        return ()

    def check_scored(self, split: Split, data: TaskData, faults: Faults) -> None:
        self.check_numbers(split, faults)

    @staticmethod
    def check_numbers(split: Split, faults: Faults) -> None:
        kept = []
        for row in split.examples:
            if number(row.label) is None:
                faults.fault("malformed_line", row.line, f"score {row.label!r} is not a finite number")
            else:
                kept.append(row)
        split.examples = kept

    def num_labels(self, data: TaskData) -> int:
        return 1

    def encode(self, tokenizer, data: TaskData, examples: list, settings, *, train: bool) -> Encoded:
        return encode_rows(tokenizer, examples, [float(r.label) for r in examples], settings.max_length)

    def decode(self, data: TaskData, split: str, examples: list, encoded: Encoded, outputs: list,
               state: dict) -> list[float]:
        return [float(np.asarray(out["logits"]).reshape(-1)[0]) for out in outputs]

    def gold(self, data: TaskData, example: Row) -> float:
        return float(example.label)

    def score(self, data: TaskData, golds: list, predictions: list) -> dict[str, Any]:
        return {"pearson": metrics.pearson(golds, predictions),
                "spearman": metrics.spearman(golds, predictions), "n": len(golds)}

    def baseline(self, data: TaskData, split: Split) -> list[float]:
        if data.pair:
            return [_overlap(r.text, r.text_b or "") for r in split.examples]
        mean = sum(float(r.label) for r in data.train.examples) / len(data.train.examples)
        return [mean] * len(split.examples)

    def collapsed(self, predictions: list) -> str | None:
        if len(predictions) > 1 and max(predictions) - min(predictions) < 1e-6:
            return f"{predictions[0]:.4g} for every example"
        return None


def _overlap(a: str, b: str) -> float:
    x, y = set(a.lower().split()), set(b.lower().split())
    return len(x & y) / len(x | y) if x | y else 0.0

KIND = Regression()
