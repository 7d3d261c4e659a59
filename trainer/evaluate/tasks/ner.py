"""Named entities (CoNLL-2003, UNER, WikiANN): a tag per word as in tagging, scored by entity-level precision,
recall and F1, micro over all entities and per type, exactly as seqeval's default mode (conlleval's rules:
an entity is a maximal run of a type's tags begun by `B-`, by `S-`, or by an `I-` that does not continue an
entity of its type). Devlin et al. 2019 fine-tune and score CoNLL-2003 this way (5.3, Table 7), predicting
with the first piece of each word. Baseline: every word `O` (no entity found: F1 0, and a token accuracy
of ~0.83 on CoNLL-2003, which is why token accuracy, reported too, is not the score).
"""

from __future__ import annotations

from typing import Any

from trainer.evaluate import metrics
from trainer.evaluate.data import Faults, Split, TaskData, check_known_labels
from trainer.evaluate.tasks.tag import Tag


class Ner(Tag):
    name = "ner"
    title = "named entities"
    formats = ("conll",)
    metrics = ("entity_f1", "accuracy")
    unit = "entities"
    baseline_name = "all O"
    no_piece = "O"  # a word the tokenizer drops is outside every entity

    def check_scored(self, split: Split, data: TaskData, faults: Faults) -> None:
        """An entity type (or tag) never trained on is a fault; under skip its sentence is left out whole (a
        word cannot leave an entity sequence without changing its entities)."""
        check_known_labels(split, set(data.labels), faults, whole_sentence=True)

    def size(self, split: Split) -> str:
        from seqeval.metrics.sequence_labeling import get_entities

        entities = len(get_entities([list(s.labels) for s in split.examples]))
        return (f"{len(split.examples):,} sentences ({split.units:,} words, {entities:,} entities, "
                f"{split.scheme})")

    def score(self, data: TaskData, golds: list, predictions: list) -> dict[str, Any]:
        found = metrics.entities(golds, predictions)
        flat = [(g, p) for gs, ps in zip(golds, predictions, strict=True)
                for g, p in zip(gs, ps, strict=True)]
        return found | {"accuracy": metrics.accuracy([g for g, _ in flat], [p for _, p in flat])}

    def baseline(self, data: TaskData, split: Split) -> list[list[str]]:
        return [["O"] * len(s.words) for s in split.examples]

    def collapsed(self, predictions: list) -> str | None:
        if all(tag == "O" for p in predictions for tag in p):
            return "'O' for every word (no entity found)"
        return None


KIND = Ner()
