"""Extractive question answering (SQuAD v1.1 and v2.0; Devlin et al. 2019, 4.2-4.3): BERT's start and end
vectors on the encoder (`BertForQuestionAnswering`), an answer span cut from the context, scored by exact
match and F1 by the official SQuAD rules (`squad_metric.py`, equal to the official scripts), F1 the headline
as in the paper's Tables 2 and 3; scores are fractions here (88.5 in the paper is 0.885).

The pieces are the squad modules': `squad.py` reads and checks the files (bad input: one line naming the file
and the question id, or a counted skip) and holds the baselines; `squad_features.py` cuts a question's
context into overlapping windows (`--doc-stride`) and decodes the best span over all of them (at most
`--max-answer-length` pieces) with its null odds. A task's files are one SQuAD version: it decides the
scoring rules and whether "no answer" is learnt.

v2.0's "no answer": a question is answered "" when its null odds (null score - best span score) exceed a
threshold chosen on dev (the official script's `best_f1_thresh`, each epoch: the dev figure is at its own
best threshold, as published dev figures are) and used unchanged on test (`state["null_threshold"]`; None
when answering no question was best).

A prediction is `{"text": answer, "null_odds": float}`; the predictions file's rows are `{"id": question
id, "gold": [answer texts], "predicted": text, "null_odds": ...}`, and beside it SQuAD's own
`predictions.json` (`{id: text}`) and, for v2.0, `null-odds.json` (the official script's
`--na-prob-file`; the odds are no probabilities, so with `--na-prob-thresh inf`, or the script blanks
answers itself): `python evaluate-v2.0.py dev-v2.0.json RUN-dev.predictions.json --na-prob-file
RUN-dev.null-odds.json --na-prob-thresh inf` reports our scores. Baselines (`squad.baseline`): v2.0 the
empty answer, v1.1 the context's first words.
"""

from __future__ import annotations

import math
from typing import Any

from corpusprep.errors import DataError, UsageError
from trainer.evaluate import squad, squad_metric
from trainer.evaluate.data import Faults, Split, TaskData
from trainer.evaluate.squad import Question, SquadSplit
from trainer.evaluate.squad_features import QAFeatures, check_windows, decode, encode
from trainer.evaluate.tasks.base import TaskKind


def fractions(found: dict[str, Any]) -> dict[str, Any]:
    """squad_metric's percentages as the fractions every trainer.evaluate score is (its breakdowns too)."""
    return {k: v / 100 if k in ("exact_match", "f1") else fractions(v) if isinstance(v, dict) else v
            for k, v in found.items()}


class QA(TaskKind):
    name = "qa"
    title = "extractive question answering"
    model_class = "AutoModelForQuestionAnswering"
    outputs = ("start_logits", "end_logits")
    token_level = True
    formats = ("squad",)
    metrics = ("f1", "exact_match")
    unit = "questions"
    baseline_name = "empty answer (v2.0) or the context's first words (v1.1)"

    # ------------------------------------------------------------ the data

    def label_set(self, train: Split, settings) -> tuple[str, ...]:
        if not any(q.answers for q in train.examples):
            raise DataError(f"{train.path}: no question has an answer; nothing to learn")
        return ()

    def check_scored(self, split: Split, data: TaskData, faults: Faults) -> None:
        if split.version != data.train.version:
            raise UsageError(f"{split.path}: SQuAD v{split.version}, but the training file is v"
                             f"{data.train.version} (a task's files are one version: its scoring rules, and "
                             "whether no answer is learnt)")

    def num_labels(self, data: TaskData) -> int:
        return 2  # a start and an end logit per piece

    def size(self, split: SquadSplit) -> str:
        unanswerable = sum(1 for q in split.examples if not q.answers)
        return f"{len(split.examples):,} questions" + (f" ({unanswerable:,} unanswerable)" if
                                                       split.version == "2.0" else "")

    def check_model(self, hf_dir) -> None:
        from trainer.evaluate.finetune import load_tokenizer

        if not load_tokenizer(hf_dir).is_fast:  # spans map back to the context by a fast tokenizer's offsets
            raise UsageError(f"{hf_dir}: question answering needs a fast tokenizer (tokenizer.json)")

    # ------------------------------------------------------------ the model

    def encode(self, tokenizer, data: TaskData, examples: list, settings, *, train: bool) -> QAFeatures:
        stride = check_windows(settings.max_length, settings.doc_stride, settings.max_answer_length)
        return encode(tokenizer, examples, settings.max_length, stride, labels=train,
                      max_answer_length=settings.max_answer_length)

    def collator(self, transformers, tokenizer):
        # inputs padded; the start and end positions of training are one number each
        return transformers.DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)

    def decode(self, data: TaskData, split: str, examples: list[Question], encoded: QAFeatures,
               outputs: list, state: dict) -> list[dict[str, Any]]:
        """Each question's best span; v2.0: "" where its null odds exceed the threshold, chosen here on dev
        (kept in `state`) and read from `state` on test."""
        spans, odds = decode(examples, encoded, [o["start_logits"] for o in outputs],
                             [o["end_logits"] for o in outputs])
        if data.train.version == "2.0":
            if split == "dev":  # -inf (answer nothing) is None in the run's record: JSON has no infinity
                threshold = squad_metric.choose_null_threshold({q.id: q.golds for q in examples}, spans, odds)
                state["null_threshold"] = threshold if math.isfinite(threshold) else None
            threshold = -math.inf if state["null_threshold"] is None else state["null_threshold"]
            spans = squad_metric.apply_null_threshold(spans, odds, threshold)
        return [{"text": spans[q.id], "null_odds": odds[q.id]} for q in examples]

    # ------------------------------------------------------------ scores

    def gold(self, data: TaskData, example: Question) -> list[str]:
        return example.golds

    def score(self, data: TaskData, golds: list, predictions: list) -> dict[str, Any]:
        """Exact match and F1 by the official rules of the files' version (v2.0: also by answerable and
        unanswerable questions), as fractions; "n": the questions."""
        keys = [str(i) for i in range(len(golds))]
        found = squad_metric.score(dict(zip(keys, golds, strict=True)),
                                   {k: p["text"] for k, p in zip(keys, predictions, strict=True)},
                                   data.train.version)
        return fractions(found)

    def baseline(self, data: TaskData, split: SquadSplit) -> list[dict[str, Any]]:
        _, answers = squad.baseline(data.train, split)
        return [{"text": answers[q.id], "null_odds": None} for q in split.examples]

    def baseline_title(self, data: TaskData) -> str:
        return squad.baseline_name(data.train, data.train.version)

    def collapsed(self, predictions: list) -> str | None:
        texts = {p["text"] for p in predictions}
        if len(texts) == 1 and len(predictions) > 1:
            text = next(iter(texts))
            return f"{text!r} for every question" if text else "no answer to every question"
        return None

    def record(self, example: Question, index: int, gold: Any, prediction: Any) -> dict[str, Any]:
        row = {"id": example.id, "gold": gold, "predicted": prediction["text"]}
        return row | ({"null_odds": prediction["null_odds"]} if prediction["null_odds"] is not None else {})

    def side_files(self, data: TaskData, split: SquadSplit, predictions: list) -> dict[str, Any]:
        """SQuAD's own `predictions.json` ({question id: answer text}) and, for v2.0, `null-odds.json`
        ({question id: null odds}: the official script's --na-prob-file)."""
        ids = [q.id for q in split.examples]
        files = {"predictions.json": {i: p["text"] for i, p in zip(ids, predictions, strict=True)}}
        if split.version == "2.0" and all(p["null_odds"] is not None for p in predictions):
            files["null-odds.json"] = {i: p["null_odds"] for i, p in zip(ids, predictions, strict=True)}
        return files


KIND = QA()
