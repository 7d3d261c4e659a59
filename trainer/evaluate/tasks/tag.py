"""Token tagging (UD's UPOS, XPOS...): a label per word, scored by word accuracy.

The first word piece of each word carries its label, as BERT did (Devlin et al. 2019, 5.3); the other
pieces and the special tokens get -100, which the loss ignores. A sentence longer than `max_length` pieces
is cut into consecutive windows of whole words, so every word is trained on and scored exactly once.
Baseline: each word's most frequent tag in the training data.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from trainer.evaluate import metrics
from trainer.evaluate.data import Faults, Sentence, Split, TaskData, check_known_labels, label_set
from trainer.evaluate.tasks.base import IGNORE, Encoded, TaskKind, input_names

CHARS_PER_PIECE = 100  # WordPiece reads a word of more characters as one [UNK]: words are cut to this x room


class Tag(TaskKind):
    name = "tag"
    title = "tagging"
    model_class = "AutoModelForTokenClassification"
    token_level = True
    formats = ("conllu", "conll")
    metrics = ("accuracy",)
    unit = "words"
    baseline_name = "most frequent tag per word"

    def label_set(self, train: Split, settings) -> tuple[str, ...]:
        return label_set(train, (label for s in train.examples for label in s.labels))

    def check_scored(self, split: Split, data: TaskData, faults: Faults) -> None:
        check_known_labels(split, set(data.labels), faults)

    def size(self, split: Split) -> str:
        return f"{len(split.examples):,} sentences ({split.units:,} words)"

    # ------------------------------------------------------------ the model

    def encode(self, tokenizer, data: TaskData, examples: list, settings, *, train: bool) -> Encoded:
        label_ids = {label: i for i, label in enumerate(data.labels)}
        room = settings.max_length - 2  # [CLS] ... [SEP]
        flat = [w[: CHARS_PER_PIECE * room] for s in examples for w in s.words]
        # verbose=False: a word longer than the model (a URL) is cut below; transformers' "indexing errors"
        # warning about it would be a false alarm
        pieces = tokenizer(flat, add_special_tokens=False, verbose=False)["input_ids"] if flat else []
        encoded = Encoded()
        k = 0
        for si, sentence in enumerate(examples):
            window: list[tuple[int, list[int]]] = []  # (word index, pieces)
            used = 0
            for wi in range(len(sentence.words)):
                word = pieces[k][:room]  # a word longer than a window keeps its first pieces (its label's)
                k += 1
                if window and used + len(word) > room:
                    self._add_window(encoded, tokenizer, sentence, si, window, label_ids)
                    window, used = [], 0
                window.append((wi, word))
                used += len(word)
            self._add_window(encoded, tokenizer, sentence, si, window, label_ids)
        return encoded

    @staticmethod
    def _add_window(encoded: Encoded, tokenizer, sentence: Sentence, si: int, window: list,
                    label_ids: dict[str, int]) -> None:
        ids, labels, where = [tokenizer.cls_token_id], [IGNORE], []
        for wi, word in window:
            if word:  # a word the tokenizer drops entirely (only control characters) cannot be labelled
                where.append((len(ids), wi))
                labels += [label_ids.get(sentence.labels[wi], IGNORE)] + [IGNORE] * (len(word) - 1)
                ids += word
        ids.append(tokenizer.sep_token_id)
        labels.append(IGNORE)
        inputs = {"input_ids": ids, "token_type_ids": [0] * len(ids), "attention_mask": [1] * len(ids)}
        encoded.features.append({k: inputs[k] for k in input_names(tokenizer)} | {"labels": labels})
        encoded.example.append(si)
        encoded.meta.append(where)

    def decode(self, data: TaskData, split: str, examples: list, encoded: Encoded, outputs: list,
               state: dict) -> list[list[str]]:
        """A tag per word: its first piece's; a word without a piece gets `self.no_piece`."""
        predicted = [[self.no_piece] * len(s.words) for s in examples]
        for si, where, out in zip(encoded.example, encoded.meta, outputs, strict=True):
            ids = np.asarray(out["logits"]).argmax(-1)
            for position, wi in where:
                predicted[si][wi] = data.labels[int(ids[position])]
        return predicted

    no_piece = ""  # never a gold tag: a word the tokenizer drops is scored wrong

    # ------------------------------------------------------------ scores

    def gold(self, data: TaskData, example: Sentence) -> list[str]:
        return list(example.labels)

    def score(self, data: TaskData, golds: list, predictions: list) -> dict[str, Any]:
        """Word accuracy over the words with a gold label ("" is a word left out of the score)."""
        pairs = [(g, p) for gs, ps in zip(golds, predictions, strict=True)
                 for g, p in zip(gs, ps, strict=True) if g]
        return {"accuracy": metrics.accuracy([g for g, _ in pairs], [p for _, p in pairs]), "n": len(pairs)}

    def baseline(self, data: TaskData, split: Split) -> list[list[str]]:
        """Each word's most frequent tag in the training data (its lower-cased form's when the exact form is
        unseen; the most frequent tag overall when both are), ties by label order."""
        by_form: dict[str, Counter] = {}
        by_lower: dict[str, Counter] = {}
        overall: Counter = Counter()
        for sentence in data.train.examples:
            for word, label in zip(sentence.words, sentence.labels, strict=True):
                by_form.setdefault(word, Counter())[label] += 1
                by_lower.setdefault(word.lower(), Counter())[label] += 1
                overall[label] += 1
        table = {form: _best(c) for form, c in by_form.items()}
        lower = {form: _best(c) for form, c in by_lower.items()}
        default = _best(overall)
        return [[table.get(w) or lower.get(w.lower()) or default for w in s.words] for s in split.examples]

    def collapsed(self, predictions: list) -> str | None:
        tags = Counter(t for p in predictions for t in p)
        if len(tags) == 1 and sum(tags.values()) > 1:
            return f"{next(iter(tags))!r} for every word"
        return None

    def record(self, example: Sentence, index: int, gold: Any, prediction: Any) -> dict[str, Any]:
        return {"id": example.lines[0], "words": list(example.words), "gold": gold, "predicted": prediction}


def _best(counts: Counter) -> str:
    return max(sorted(counts), key=counts.__getitem__)


KIND = Tag()
