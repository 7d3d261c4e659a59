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

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from corpusprep.errors import UsageError
from corpusprep.flags import flag
from corpusprep.split.languages import ENGLISH, LANGUAGES, base_code, find_language
from corpusprep.split.linebreaks import LINE_BREAKS, with_line_breaks
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


@dataclass(frozen=True)
class SentencesOptions:
    """The `sentences` options that decide the output's bytes (besides the read options). `build-pairs`
    takes its splitter, language and line breaks from here (`flags.like`)."""

    splitter: str = flag(
        "default",
        "default: corpusprep's rule-based splitter (every script's sentence marks; abbreviations, ordinals "
        "and dates of the --language); lines: every non-empty line is a sentence; pysbd, blingfire, "
        "sentencex: those libraries, if installed. Input that is already split (BERT format) is kept as it "
        "is.")
    # text (a sentence a line) or parquet (doc_id, sentence_index, text); the command line's default comes
    # from the output's name (`split.stage.output_format`)
    format: str = flag(
        "text",
        "text (Google's one-sentence-per-line format) or parquet (one row per sentence: doc_id, "
        "sentence_index, text). Default: parquet for a .parquet output, else text.",
        cli_type=str | None, cli_default=None, show_default=False)
    language: str = flag(
        "en",
        "Language of the text, as an ISO 639-1 code (en, de, fr, zh, ja, hi, ...): selects the splitter's "
        "abbreviations, ordinals and dates for it.")
    line_breaks: str = flag(
        "auto",
        "What a line break inside a document means. auto: join the lines of hard-wrapped paragraphs "
        "(Project Gutenberg style), keep every other line break (one sentence or paragraph a line, lists, "
        "verse, headings); sentence: every line break ends a sentence; paragraph: join the lines of each "
        "blank-line-separated paragraph (lists and indented blocks kept).",
        parse=str.lower)


def check_language(code: str) -> str:
    """An ISO 639-1 code, any case, with an optional region or script (`pt-BR`, `zh_Hant`), or a
    UsageError. Returned as given: the splitter reads the language from its first two letters."""
    primary, sep, rest = code.replace("_", "-").partition("-")
    ok_rest = not sep or (rest.isascii() and rest.replace("-", "").isalnum())
    if not (len(primary) == 2 and primary.isascii() and primary.isalpha() and ok_rest):
        raise UsageError(f"--language {code!r}: expected an ISO 639-1 code such as en, de, zh, pt-BR")
    return code


def make_splitter(
    name: str = "default", language: str = "en", line_breaks: str = "auto"
) -> Callable[[str], list[str]]:
    """The splitter `name` for `language` (ISO 639-1), behind the `line_breaks` rule (see split.linebreaks).

    The `lines` splitter takes every line as a sentence, so no line is ever joined for it.
    """
    check_language(language)
    if line_breaks not in LINE_BREAKS:
        raise UsageError(f"--line-breaks {line_breaks!r}: choose one of {', '.join(LINE_BREAKS)}")
    if "language" in inspect.signature(get_splitter).parameters:
        split = get_splitter(name, language=language)
    else:  # a splitter registry without per-language rules: its language-independent splitter
        split = get_splitter(name)
    return with_line_breaks(split, "sentence" if name == "lines" else line_breaks)


__all__ = ["SPLITTERS", "SentencesOptions", "Splitter", "check_language", "get_splitter", "make_splitter",
           "split_lines", "split_sentences"]
