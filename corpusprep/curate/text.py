"""The one normalisation of curate, and the hashes built on it.

`canonical(text)`: Unicode NFC, case folded (`str.casefold`), every run of whitespace one space, stripped:
two documents are exact duplicates when their canonical texts are equal. `words(text)`: the runs of word
characters (`\\w+`, any script) of the canonical text, punctuation dropped: the words of shingles (near
duplicates) and of n-grams (decontamination), as datatrove's `simplify_text` and NeMo Curator drop
punctuation. Text without spaces between words (Chinese, Japanese) gives long runs: one "word" a run.

Hashes are the same on every machine and Python run (never `hash`): a word's is blake2b's (64 bits, cached
per process), an n-gram's a mix of its words' (`ngram_hashes`, vectorised with numpy, uint64 arithmetic
wrapping as intended).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

import numpy as np

WORD = re.compile(r"\w+")
SPACE = re.compile(r"\s+")
_CACHE_LIMIT = 1 << 20  # words kept per process; cleared when full (a cache, never a result)
_word_hashes: dict[str, int] = {}
# splitmix64's constants (Steele et al. 2014): a finaliser that spreads every input bit over the output
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_STEP = np.uint64(0x9E3779B97F4A7C15)  # the golden ratio's 64 bits: one n-gram position to the next
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def canonical(text: str) -> str:
    return SPACE.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()


def words(text: str) -> list[str]:
    return WORD.findall(unicodedata.normalize("NFC", text).casefold())


def exact_key(text: str) -> tuple[int, int]:
    """128 bits of blake2b of the canonical text, as two integers (a collision: 2^-64 at 2^32 documents)."""
    digest = hashlib.blake2b(canonical(text).encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")


def line_key(line: str) -> int:
    digest = hashlib.blake2b(canonical(line).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def word_hashes(tokens: list[str]) -> np.ndarray:
    """uint64 hash of each word."""
    cache = _word_hashes
    if len(cache) > _CACHE_LIMIT:
        cache.clear()
    out = np.empty(len(tokens), dtype=np.uint64)
    for i, word in enumerate(tokens):
        h = cache.get(word)
        if h is None:
            h = cache[word] = int.from_bytes(
                hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
        out[i] = h
    return out


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (a new array)."""
    x = x ^ (x >> _S30)
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return x


def ngram_hashes(hashes: np.ndarray, n: int, *, whole: bool = False) -> np.ndarray:
    """uint64 hash of each run of `n` consecutive words (`hashes`: their word hashes). Fewer than `n` words:
    none, or with `whole` one hash of all of them (a short document is still one shingle)."""
    m = len(hashes)
    if m < n:
        if not whole or m == 0:
            return np.empty(0, dtype=np.uint64)
        n = m
    with np.errstate(over="ignore"):
        out = hashes[: m - n + 1].copy()
        for k in range(1, n):
            out *= _STEP
            out ^= mix(hashes[k: m - n + 1 + k])
        out += np.uint64(n)
        return mix(out)
