"""Hard text for tokenizer agreement tests: real prose, and seeded sentences mixing scripts and edge cases."""

from __future__ import annotations

import json
import re
from pathlib import Path

from corpusprep.engine.rng import rng_for

# Words that stress normalization and splitting: accents (composed and combining), case folding (İ, ß, Σ),
# CJK and other scripts, digits and separators, punctuation runs, symbols, zero-width and control
# characters, special-token look-alikes, and a word longer than WordPiece's 100-character limit.
EDGE_WORDS = [
    "café", "cafe\u0301", "naïve", "Zürich", "résumé", "ÉCOLE", "Ångström", "İstanbul", "Straße", "ΣΊΣΥΦΟΣ",
    "東京都", "中华人民共和国", "日本語の文章", "한국어", "ภาษาไทย", "Москва", "مرحبا", "עברית", "हिन्दी",
    "3.14159", "1,000,000", "2024-01-31", "42nd", "½", "①", "x²", "10%", "$5.99", "€20", "#hashtag",
    "e-mail", "don't", "U.S.A.", "...", "?!", "—", "«quoted»", "(parens)", "[brackets]", "{braces}",
    "[MASK]", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[unused0]", "[mask]", "MASK",
    "zero\u200bwidth", "soft\u00adhyphen", "tab\there", "nbsp\u00a0space", "bell\x07char", "ﬁnance",
    "Ｆｕｌｌ",
    "emoji😀", "🚀", "a" * 120, "x" * 99 + "é",
]
COMMON_WORDS = ["the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with"]


def head_lines(path: Path, count: int) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line for line, _ in zip(f, range(count), strict=False)]


def corpus_sentences(jsonl: Path, limit: int) -> list[str]:
    """Real sentences from a JSONL corpus, split crudely at sentence-final punctuation."""
    sentences: list[str] = []
    with open(jsonl, encoding="utf-8") as f:
        for line in f:
            for paragraph in json.loads(line)["text"].split("\n"):
                sentences += [s for s in re.split(r"(?<=[.!?])\s+", paragraph) if s.strip()]
            if len(sentences) >= limit:
                return sentences[:limit]
    return sentences


def mixed_sentences(count: int, seed: int = 0) -> list[str]:
    """Seeded sentences mixing common words with edge-case words and odd spacing."""
    rng = rng_for(seed, "test", "mixed_sentences")
    spaces = [" ", " ", " ", "  ", "\t", "\n", "\u3000"]
    out = []
    for _ in range(count):
        n = int(rng.integers(3, 20))
        words = [
            EDGE_WORDS[rng.integers(len(EDGE_WORDS))]
            if rng.random() < 0.35
            else COMMON_WORDS[rng.integers(len(COMMON_WORDS))]
            for _ in range(n)
        ]
        if rng.random() < 0.5:
            words[0] = words[0].capitalize()
        text = words[0]
        for word in words[1:]:
            text += spaces[rng.integers(len(spaces))] + word
        out.append(text + ".")
    return out
