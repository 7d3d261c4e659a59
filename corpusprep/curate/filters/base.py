"""What a quality filter is: a name, its source, and `apply(document)`, one document at a time."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from functools import cached_property

from corpusprep.curate import text as txt


@dataclass
class Doc:
    """A document as filters see it: its text and, computed once for all filters, its lines and words."""

    text: str

    @cached_property
    def lines(self) -> list[str]:
        return [line for line in self.text.split("\n") if line.strip()]

    @cached_property
    def words(self) -> list[str]:
        return self.text.split()  # Gopher counts whitespace-separated words, punctuation included

    @cached_property
    def plain_words(self) -> list[str]:
        return txt.words(self.text)


@dataclass(frozen=True)
class Verdict:
    """Keep the document (`remove` None), with `text` when lines were taken out; or remove it, `remove`
    saying why ("12 words; at least 50")."""

    remove: str | None = None
    text: str | None = None


KEEP = Verdict()


@dataclass(frozen=True)
class Filter(abc.ABC):
    name: str
    source: str  # the paper and section the rule and its thresholds come from
    thresholds: dict = field(default_factory=dict)  # the defaults, for the manual and the report

    @abc.abstractmethod
    def apply(self, doc: Doc) -> Verdict: ...
