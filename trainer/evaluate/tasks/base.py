"""What trainer.evaluate knows about one kind of task, in one class: how its labels are checked, which
transformers model fine-tunes it, how its examples become model inputs and the model's outputs become one
prediction per example, how predictions are scored (`trainer/evaluate/metrics.py`), its cheap baseline and
its predictions file. `finetune.py` and `compare.py` run every kind the same way:

    features = kind.encode(tokenizer, data, examples, settings, train=...)   # one or more per example
    outputs  = the model's outputs (`kind.outputs`) for each feature, as numpy arrays
    preds    = kind.decode(data, split, examples, features, outputs, state)  # one per example
    scores   = kind.score(data, [kind.gold(data, e) for e in examples], preds)

An example may give several features (a sentence longer than the model, tagged in windows; a question whose
context is longer than the model, read in overlapping windows): `Encoded.example` says which example each
feature comes from and `Encoded.meta` what decoding needs of it (where each word's first piece is; for
extractive QA, the character offsets of each piece in its context). `decode` receives every feature of a
split at once, so a kind that scores an example from several features (QA: the best span over all windows
of a question by start + end logit, within the maximum answer length) sees them together. `state` is one
dict per run that decoding the dev split may fill and decoding test reads (QA v2.0: the no-answer
threshold chosen on dev, then used unchanged on test); it is recorded with the run.

Predictions are plain JSON values (a tag per word, a label, a number, an answer and its null odds) so that
`record` writes each as one line of `predictions/{init}-seed{N}-{split}.jsonl` and a test can recompute
every score from those files with the field's own scorer; `side_files` may add files in a field's own
format beside it (QA: SQuAD's `predictions.json` and v2.0's null odds, which the official script reads).
Nothing here imports torch; a kind imports its scorer (seqeval, sklearn, scipy, the SQuAD rules) when it
scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from trainer.evaluate.data import Example, Faults, Split, TaskData

IGNORE = -100  # the label transformers' losses skip



def input_names(tokenizer) -> tuple[str, ...]:
    """The inputs the model's tokenizer makes and its model reads: BERT's three, or ModernBERT's two (no
    token_type_ids: its model takes none)."""
    return tuple(tokenizer.model_input_names)

@dataclass
class Encoded:
    """The model inputs of a split: one feature per window or row; for each, its example and what decoding
    needs of it."""

    features: list[dict[str, Any]] = field(default_factory=list)  # input_ids, ..., and labels when training
    example: list[int] = field(default_factory=list)  # the example (index in the split) each feature reads
    meta: list[Any] = field(default_factory=list)  # per feature, for decode
    truncated: int = 0  # examples cut to fit max_length (counted for the report)

    def counts(self) -> dict[str, int]:
        """What encoding did, for the run's record: examples, their features (windows), those cut."""
        return {"examples": len(set(self.example)), "features": len(self.features),
                "truncated": self.truncated}


class TaskKind:
    """One kind of task. A subclass sets the class attributes and implements the methods that raise here;
    its module ends with `KIND = Subclass()` and is one line of `tasks.REGISTRY`."""

    name: ClassVar[str]  # --task NAME
    title: ClassVar[str]  # for the report: "tagging", "named entities"...
    model_class: ClassVar[str]  # the transformers Auto class fine-tuned: AutoModelForTokenClassification...
    outputs: ClassVar[tuple[str, ...]] = ("logits",)  # the model outputs decode reads
    token_level: ClassVar[bool] = False  # an output per position (trimmed to the feature's length)
    formats: ClassVar[tuple[str, ...]]  # the file formats it reads (data.FORMATS)
    metrics: ClassVar[tuple[str, ...]]  # what `score` reports; the first is the default headline (--metric)
    unit: ClassVar[str]  # what a score counts: "words", "entities", "rows", "questions"
    baseline_name: ClassVar[str]  # the cheap baseline, for the report

    # ------------------------------------------------------------ the data

    def label_set(self, train: Split, settings) -> tuple[str, ...]:
        """The labels a model chooses from (label id = index), from the training file; () for none."""
        raise NotImplementedError

    def check_scored(self, split: Split, data: TaskData, faults: Faults) -> None:
        """Check a dev or test split against the training data (a label never trained on is a fault)."""
        raise NotImplementedError

    def num_labels(self, data: TaskData) -> int:
        return len(data.labels)

    def check_model(self, hf_dir) -> None:
        """Refuse, with one line before any run, a model directory this kind cannot fine-tune."""

    def size(self, split: Split) -> str:
        """A split's size for the report: "2,001 sentences (25,147 words)", "408 rows"."""
        return f"{len(split.examples):,} rows"

    # ------------------------------------------------------------ the model

    def encode(self, tokenizer, data: TaskData, examples: list[Example], settings, *, train: bool) -> Encoded:
        """Model inputs of `examples`, within `settings.max_length` pieces (the caller has capped it at the
        model's positions); with training labels when `train`. Texts are cut before they are tokenized, so
        a huge line costs no more than the pieces it can give."""
        raise NotImplementedError

    def collator(self, transformers, tokenizer):
        if self.token_level:
            return transformers.DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=8)
        return transformers.DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)

    def decode(self, data: TaskData, split: str, examples: list[Example], encoded: Encoded,
               outputs: list[dict[str, Any]], state: dict) -> list[Any]:
        """One prediction per example from the outputs of all its features (see the module's docstring)."""
        raise NotImplementedError

    # ------------------------------------------------------------ scores

    def gold(self, data: TaskData, example: Example) -> Any:
        raise NotImplementedError

    def score(self, data: TaskData, golds: list[Any], predictions: list[Any]) -> dict[str, Any]:
        """Every metric of `metrics` (by the field's scorer), and "n": what the score counts."""
        raise NotImplementedError

    def baseline(self, data: TaskData, split: Split) -> list[Any]:
        """The cheap baseline's prediction for each example of `split` (scored like a model's)."""
        raise NotImplementedError

    def baseline_title(self, data: TaskData) -> str:
        """The baseline's name for the report (a kind whose baseline depends on the data says which)."""
        return self.baseline_name

    def collapsed(self, predictions: list[Any]) -> str | None:
        """What a run predicts for every example when it predicts one thing only (it learnt nothing but the
        majority), else None."""
        values = {repr(p) for p in predictions}
        return f"{predictions[0]!r} for every example" if len(values) == 1 and len(predictions) > 1 else None

    def record(self, example: Example, index: int, gold: Any, prediction: Any) -> dict[str, Any]:
        """One line of the predictions file."""
        return {"id": index, "gold": gold, "predicted": prediction}

    def side_files(self, data: TaskData, split: Split, predictions: list[Any]) -> dict[str, Any]:
        """Files beside a run's predictions file of `split`, `{init}-seed{N}-{split}.NAME`: NAME -> a JSON
        value, for a field's own tools; none by default."""
        return {}
