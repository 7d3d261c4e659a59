"""Accuracy measures for sentence splitters, shared by the benchmark and the tests.

Boundary F1: a document's boundaries are the places where one sentence ends and the next begins, written as
the number of non-whitespace characters before that place (so splitters that change whitespace compare
fairly; the document's end is not a boundary). Over a gold set, true positives are predicted boundaries that
are also gold boundaries; precision, recall and F1 are micro-averaged over all documents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from corpusprep.engine import storage


def boundaries(sentences: Sequence[str]) -> tuple[set[int], int]:
    """The boundary offsets (in non-whitespace characters) of a segmentation, and its non-space length."""
    offsets, total = set(), 0
    for sentence in sentences:
        total += len("".join(sentence.split()))
        offsets.add(total)
    offsets.discard(total)
    return offsets, total


@dataclass(frozen=True)
class BoundaryScore:
    true_positives: int
    predicted: int
    gold: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.gold if self.gold else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def boundary_score(
    split: Callable[[str], list[str]], documents: Iterable[tuple[str, Sequence[str]]]
) -> BoundaryScore:
    """Score `split` on (text, gold sentences) pairs; a splitter that loses or adds characters is an error."""
    tp = predicted = gold = 0
    for text, gold_sentences in documents:
        want, want_total = boundaries(gold_sentences)
        got, got_total = boundaries(split(text))
        if got_total != want_total:
            raise ValueError(f"splitter changed the non-whitespace text of {text[:60]!r}")
        tp += len(got & want)
        predicted += len(got)
        gold += len(want)
    return BoundaryScore(tp, predicted, gold)


def load_golden_rules(path: str | Path) -> list[dict]:
    """pySBD's English golden rules: {id, rule, text, sentences}."""
    return [json.loads(line) for line in storage.read_text(path).splitlines() if line.strip()]


def golden_rule_failures(split: Callable[[str], list[str]], rules: Iterable[dict]) -> list[dict]:
    """Rules whose text `split` does not turn into exactly the expected sentences."""
    return [rule for rule in rules if split(rule["text"]) != rule["sentences"]]


def load_ewt_documents(path: str | Path) -> list[tuple[str, list[str]]]:
    """UD English-EWT documents as (text, gold sentences): paragraphs joined with a single space, so paragraph
    ends must be found like any other boundary."""
    documents = []
    for line in storage.read_text(path).splitlines():
        if line.strip():
            record = json.loads(line)
            sentences = [s for paragraph in record["paragraphs"] for s in paragraph]
            documents.append((" ".join(sentences), sentences))
    return documents


# Scripts written without spaces between sentences: a paragraph's sentences are joined with nothing.
NO_SPACE_LANGUAGES = frozenset(("zh", "ja", "th", "lo", "km", "my", "bo"))


@dataclass(frozen=True)
class Paragraph:
    text: str
    squashed: str  # the text without whitespace: boundaries are offsets into it
    gold: frozenset[int]  # inner boundaries (the paragraph's end is given and not scored)


def _squash(text: str) -> str:
    return "".join(text.split())


def load_ud_paragraphs(path: str | Path, language: str) -> list[Paragraph]:
    """A Universal Dependencies gold set ({"paragraphs": [[sentence, ...], ...]} a line): each paragraph as
    the splitter sees it (its sentences joined by a space, or by nothing in NO_SPACE_LANGUAGES)."""
    joiner = "" if language in NO_SPACE_LANGUAGES else " "
    out = []
    for line in storage.read_text(path, encoding="utf-8").splitlines():
        if not line.strip():
            continue
        for sentences in json.loads(line)["paragraphs"]:
            squashed = [_squash(s) for s in sentences]
            total, gold = 0, set()
            for s in squashed:
                total += len(s)
                gold.add(total)
            out.append(Paragraph(joiner.join(sentences), "".join(squashed), frozenset(gold - {0, total})))
    return out


def ud_score(split: Callable[[str], list[str]], paragraphs: Iterable[Paragraph]) -> BoundaryScore:
    """Boundary score summed over paragraphs, inner boundaries only (the UD gold sets' scoring rule)."""
    tp = predicted = gold = 0
    for para in paragraphs:
        sentences = split(para.text)
        got, total = boundaries(sentences)
        if total != len(para.squashed):
            raise ValueError(f"splitter changed the non-whitespace text of {para.text[:60]!r}")
        tp += len(got & para.gold)
        predicted += len(got)
        gold += len(para.gold)
    return BoundaryScore(tp, predicted, gold)
