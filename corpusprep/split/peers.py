"""Other splitters behind the same interface, imported only when asked for (they are optional extras)."""

from __future__ import annotations

from collections.abc import Callable

from corpusprep.errors import UsageError


def _missing(name: str) -> UsageError:
    return UsageError(f"the {name} splitter needs the {name} package: pip install {name}")


def pysbd_splitter() -> Callable[[str], list[str]]:
    try:
        import pysbd
    except ImportError:
        raise _missing("pysbd") from None
    # clean=False keeps the text as it is, so sentences stay slices of the input.
    segmenter = pysbd.Segmenter(language="en", clean=False)

    def split(text: str) -> list[str]:
        return [s.strip() for line in text.split("\n") for s in segmenter.segment(line) if s.strip()]

    return split


def blingfire_splitter() -> Callable[[str], list[str]]:
    try:
        import blingfire
    except ImportError:
        raise _missing("blingfire") from None

    def split(text: str) -> list[str]:
        # BlingFire joins lines, so paragraphs go in one at a time; it returns one sentence per line.
        return [
            s.strip()
            for line in text.split("\n")
            if line.strip()
            for s in blingfire.text_to_sentences(line).split("\n")
            if s.strip()
        ]

    return split


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
