"""Decontamination: an index of the evaluation examples' word n-grams, and the match of a document's.

An example of at least `ngram` words contributes each of its n-grams; one of `min_example_words` to
`ngram - 1` words is matched whole (its whole word sequence must occur in the document); a shorter one is
not matched (counted as too short: "yes" occurs everywhere). Words and hashes are curate/text.py's, after the
same normalisation as the corpus. The index is a few sorted arrays (an `.npz` in the work directory, read
back without pickle), so every task of the analysis loads it in a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from corpusprep.curate import text as txt
from corpusprep.curate.evalsets import EvalExample
from corpusprep.engine import storage


@dataclass
class EvalIndex:
    ngram: int
    lengths: np.ndarray  # int64 [k]: n-gram length of each table (ngram first, then whole-example lengths)
    hashes: list[np.ndarray]  # sorted uint64 per length
    owners: list[np.ndarray]  # int64 per length: the first example holding each hash
    too_short: int = 0  # examples below min_example_words: not matched

    @classmethod
    def build(cls, examples: Sequence[EvalExample], ngram: int, min_words: int) -> EvalIndex:
        by_length: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
        too_short = 0
        for i, example in enumerate(examples):
            hashes = txt.word_hashes(txt.words(example.text))
            if len(hashes) < min_words:
                too_short += 1
                continue
            n = min(ngram, len(hashes))
            grams = txt.ngram_hashes(hashes, n)
            found = by_length.setdefault(n, ([], []))
            found[0].append(grams)
            found[1].append(np.full(len(grams), i, dtype=np.int64))
        lengths = sorted(by_length, key=lambda n: (n != ngram, n))
        tables, owners = [], []
        for n in lengths:
            h = np.concatenate(by_length[n][0])
            o = np.concatenate(by_length[n][1])
            order = np.lexsort((o, h))  # by hash, then the first example: np.unique keeps the first
            h, first = np.unique(h[order], return_index=True)
            tables.append(h)
            owners.append(o[order][first])
        return cls(ngram, np.array(lengths, dtype=np.int64), tables, owners, too_short)

    def save(self, path) -> None:
        arrays = {"ngram": np.array([self.ngram, self.too_short]), "lengths": self.lengths}
        for k in range(len(self.lengths)):
            arrays[f"hashes{k}"], arrays[f"owners{k}"] = self.hashes[k], self.owners[k]
        with storage.atomic_open(path, "wb") as f:
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path) -> EvalIndex:
        with storage.open_file(path, "rb") as f, np.load(f, allow_pickle=False) as z:
            ngram, too_short = (int(x) for x in z["ngram"])
            lengths = z["lengths"]
            return cls(ngram, lengths, [z[f"hashes{k}"] for k in range(len(lengths))],
                       [z[f"owners{k}"] for k in range(len(lengths))], too_short)

    def matches(self, words: list[str]) -> set[int]:
        """The examples (by index) of which `words` hold an n-gram (or the whole example)."""
        found: set[int] = set()
        if not words:
            return found
        hashes = txt.word_hashes(words)
        for n, table, owners in zip(self.lengths.tolist(), self.hashes, self.owners, strict=True):
            grams = txt.ngram_hashes(hashes, n)
            if not len(grams) or not len(table):
                continue
            at = np.searchsorted(table, grams)
            at[at == len(table)] = 0
            hit = table[at] == grams
            if hit.any():
                found.update(owners[at[hit]].tolist())
        return found
