"""Sentence and sentence-pair classification (GLUE's SST-2, CoLA, MRPC, QQP, MNLI, QNLI, RTE...): a label per
row, scored by accuracy, F1 and Matthews correlation (GLUE's metrics: CoLA is judged by Matthews, MRPC and
QQP by F1 and accuracy, the others by accuracy; `--metric` chooses the headline).

F1 is the binary F1 of the positive label (`positive`: "1" as in MRPC and QQP, else a label named like a
positive class) and the macro F1 over the labels when there are more than two. Rows encode as
`[CLS] text [SEP]` or `[CLS] text [SEP] text_b [SEP]`, truncating the longer text first. Baseline: the
training data's most frequent label.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from trainer.evaluate import metrics
from trainer.evaluate.data import Faults, Row, Split, TaskData, check_known_labels, label_set
from trainer.evaluate.tasks.base import Encoded, TaskKind, input_names
from trainer.evaluate.tasks.tag import CHARS_PER_PIECE

POSITIVE = ("1", "true", "yes", "positive", "paraphrase", "duplicate", "acceptable", "entailment")


def positive(labels: tuple[str, ...]) -> str | None:
    """The label binary F1 is of; None (macro F1) for more than two labels."""
    if len(labels) != 2:
        return None
    return next((label for label in labels if label.lower() in POSITIVE), labels[1])


def encode_rows(tokenizer, rows: list[Row], targets: list[Any], max_length: int) -> Encoded:
    """`[CLS] text [SEP] (text_b [SEP])` of each row, cut to `max_length` pieces (the longer text loses its
    last pieces first), with its target as "labels". Texts are cut to CHARS_PER_PIECE characters a piece
    before they are tokenized, so a huge line never reaches the tokenizer whole; `verbose=False` keeps
    transformers from warning about each text longer than the model, which the truncation here handles."""
    limit = CHARS_PER_PIECE * max_length
    texts = [r.text[:limit] for r in rows]
    pairs = [(r.text_b or "")[:limit] for r in rows] if rows and rows[0].text_b is not None else None
    batch = tokenizer(texts, pairs, verbose=False)
    long = [i for i, ids in enumerate(batch["input_ids"]) if len(ids) > max_length]
    if long:  # only these again, cut to fit
        cut = tokenizer([texts[i] for i in long], [pairs[i] for i in long] if pairs else None,
                        truncation="longest_first", max_length=max_length, verbose=False)
        for j, i in enumerate(long):
            for key in batch:
                batch[key][i] = cut[key][j]
    encoded = Encoded(truncated=len(long))
    for i, target in enumerate(targets):
        feature = {k: batch[k][i] for k in input_names(tokenizer)}
        encoded.features.append(feature | {"labels": target})
        encoded.example.append(i)
        encoded.meta.append(None)
    return encoded


class Classify(TaskKind):
    name = "classify"
    title = "classification"
    model_class = "AutoModelForSequenceClassification"
    formats = ("tsv", "csv", "jsonl")
    metrics = ("accuracy", "f1", "matthews")
    unit = "rows"
    baseline_name = "majority class"

    def label_set(self, train: Split, settings) -> tuple[str, ...]:
        return label_set(train, (r.label for r in train.examples))

    def check_scored(self, split: Split, data: TaskData, faults: Faults) -> None:
        check_known_labels(split, set(data.labels), faults)

    def encode(self, tokenizer, data: TaskData, examples: list, settings, *, train: bool) -> Encoded:
        ids = {label: i for i, label in enumerate(data.labels)}
        return encode_rows(tokenizer, examples, [ids[r.label] for r in examples], settings.max_length)

    def decode(self, data: TaskData, split: str, examples: list, encoded: Encoded, outputs: list,
               state: dict) -> list[str]:
        return [data.labels[int(np.asarray(out["logits"]).argmax())] for out in outputs]

    def gold(self, data: TaskData, example: Row) -> Any:
        return example.label

    def score(self, data: TaskData, golds: list, predictions: list) -> dict[str, Any]:
        return {"accuracy": metrics.accuracy(golds, predictions),
                "f1": metrics.f1(golds, predictions, positive(data.labels)),
                "matthews": metrics.matthews(golds, predictions), "n": len(golds)}

    def baseline(self, data: TaskData, split: Split) -> list[str]:
        counts = Counter(e.label for e in data.train.examples)
        majority = max(sorted(counts), key=counts.__getitem__)
        return [majority] * len(split.examples)

    def record(self, example: Row, index: int, gold: Any, prediction: Any) -> dict[str, Any]:
        return {"id": example.line, "gold": gold, "predicted": prediction}


KIND = Classify()
