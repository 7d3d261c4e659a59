"""Split stage: document text -> sentences. "\\n" separates paragraphs and always ends a sentence.

    from corpusprep.split import get_splitter
    split = get_splitter("default")       # default (ours), lines, pysbd, blingfire, sentencex
    split("Mr. Smith went to Washington. He arrived at 5 p.m. on Monday.")
    # ['Mr. Smith went to Washington.', 'He arrived at 5 p.m. on Monday.']
    get_splitter("default", "de")("Wir treffen uns am 3. Oktober. Kommst du?")
    # ['Wir treffen uns am 3. Oktober.', 'Kommst du?']

Every splitter returns stripped, non-empty sentences whose concatenation keeps every non-whitespace character.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from corpusprep.errors import UsageError
from corpusprep.split.languages import ENGLISH, LANGUAGES, base_code, find_language
from corpusprep.split.peers import blingfire_splitter, pysbd_splitter, sentencex_splitter
from corpusprep.split.rules import split_sentences

Splitter = Callable[[str], list[str]]
SPLITTERS = ("default", "lines", "pysbd", "blingfire", "sentencex")


def split_lines(text: str) -> list[str]:
    """Each non-empty line is a sentence (for text that is already one sentence per line)."""
    return [line.strip() for line in text.split("\n") if line.strip()]


def get_splitter(name: str = "default", language: str = "en") -> Splitter:
    """The splitter `name` for an ISO 639-1 language code ("pt-BR" counts as "pt"). The default splitter knows
    every script's terminal marks whatever the code; codes with no word lists of their own (see LANGUAGES) use
    the language-independent rules. A string that is not an ISO 639-1 code is a UsageError."""
    lang = find_language(language)
    if lang is None:
        known = ", ".join(sorted(LANGUAGES))
        raise UsageError(f"unknown language {language!r}: give an ISO 639-1 code (word lists for {known})")
    if name == "default":
        return split_sentences if lang is ENGLISH else partial(split_sentences, language=lang)
    if name == "lines":
        return split_lines
    if name == "pysbd":
        return pysbd_splitter(base_code(language))
    if name == "blingfire":
        return blingfire_splitter()
    if name == "sentencex":
        return sentencex_splitter(base_code(language))
    raise UsageError(f"unknown splitter {name!r}: choose one of {', '.join(SPLITTERS)}")


__all__ = ["SPLITTERS", "Splitter", "get_splitter", "split_lines", "split_sentences"]
