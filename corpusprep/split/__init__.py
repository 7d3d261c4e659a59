"""Split stage: document text -> sentences. "\\n" separates paragraphs and always ends a sentence.

    from corpusprep.split import get_splitter
    split = get_splitter("default")       # default (ours), lines, pysbd, blingfire
    split("Mr. Smith went to Washington. He arrived at 5 p.m. on Monday.")
    # ['Mr. Smith went to Washington.', 'He arrived at 5 p.m. on Monday.']

Every splitter returns stripped, non-empty sentences whose concatenation keeps every non-whitespace character.
"""

from __future__ import annotations

from collections.abc import Callable

from corpusprep.errors import UsageError
from corpusprep.split.peers import blingfire_splitter, pysbd_splitter
from corpusprep.split.rules import split_sentences

Splitter = Callable[[str], list[str]]
SPLITTERS = ("default", "lines", "pysbd", "blingfire")


def split_lines(text: str) -> list[str]:
    """Each non-empty line is a sentence (for text that is already one sentence per line)."""
    return [line.strip() for line in text.split("\n") if line.strip()]


def get_splitter(name: str = "default") -> Splitter:
    if name == "default":
        return split_sentences
    if name == "lines":
        return split_lines
    if name == "pysbd":
        return pysbd_splitter()
    if name == "blingfire":
        return blingfire_splitter()
    raise UsageError(f"unknown splitter {name!r}: choose one of {', '.join(SPLITTERS)}")


__all__ = ["SPLITTERS", "Splitter", "get_splitter", "split_lines", "split_sentences"]
