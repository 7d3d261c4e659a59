"""Other splitters behind the same interface, imported only when asked for (they are optional extras)."""

from __future__ import annotations

from collections.abc import Callable

from corpusprep.errors import UsageError


def _missing(name: str) -> UsageError:
    return UsageError(f"the {name} splitter needs the {name} package: pip install {name}")


def _by_paragraph(split_line: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """Peers join lines, so paragraphs go in one at a time; their sentences come back stripped."""

    def split(text: str) -> list[str]:
        return [s.strip() for line in text.split("\n") if line.strip() for s in split_line(line) if s.strip()]

    return split


def pysbd_splitter(language: str = "en") -> Callable[[str], list[str]]:
    try:
        import pysbd
        from pysbd.languages import LANGUAGE_CODES
    except ImportError:
        raise _missing("pysbd") from None
    if language not in LANGUAGE_CODES:
        raise UsageError(f"pysbd has no rules for {language!r}: it knows {', '.join(sorted(LANGUAGE_CODES))}")
    # clean=False keeps the text as it is, so sentences stay slices of the input.
    return _by_paragraph(pysbd.Segmenter(language=language, clean=False).segment)


def blingfire_splitter() -> Callable[[str], list[str]]:
    """Language-agnostic: it returns one sentence per line."""
    try:
        import blingfire
    except ImportError:
        raise _missing("blingfire") from None
    return _by_paragraph(lambda line: blingfire.text_to_sentences(line).split("\n"))


def sentencex_splitter(language: str = "en") -> Callable[[str], list[str]]:
    """sentencex picks its rules by language code, falling back through related languages to English."""
    try:
        import sentencex
    except ImportError:
        raise _missing("sentencex") from None
    return _by_paragraph(lambda line: list(sentencex.segment(language, line)))


def syntok_splitter() -> Callable[[str], list[str]]:
    """Bench only (not a CLI choice): syntok's segmenter, one paragraph per line."""
    try:
        from syntok import segmenter
    except ImportError:
        raise _missing("syntok") from None

    def split(text: str) -> list[str]:
        out = []
        for line in text.split("\n"):
            for paragraph in segmenter.analyze(line):
                for sentence in paragraph:
                    joined = "".join(token.spacing + token.value for token in sentence).strip()
                    if joined:
                        out.append(joined)
        return out

    return split
