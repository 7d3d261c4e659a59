"""Word boundaries for whole-word masking in Chinese, where BERT's tokenizer writes one token per character.

WordPiece marks a word's later pieces with `##`, which is all whole-word masking needs in most languages.
CJK characters, though, are split one by one before WordPiece sees them, so a Chinese word (中国, 人工智能) is
several tokens without any `##`: a segmenter has to find the words, as the Chinese BERT-wwm models do (they
used LTP; here the optional `jieba`).

This runs at shard time, on the token ids: consecutive CJK character tokens of a segment are turned back into
their text (each is exactly one character), segmented, and every character after a word's first is marked as
a continuation. Doing it here keeps the pairs format unchanged and lets one pairs directory be masked with or
without whole words; the cost is one segmenter pass per masking.
"""

from __future__ import annotations

import functools

import numpy as np

from corpusprep.errors import UsageError

SEGMENTERS = ("jieba",)
# BERT's _is_chinese_char ranges: the characters its tokenizer isolates.
CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)


def cjk_characters(tokens: np.ndarray) -> np.ndarray:
    """`<U1` array over the vocab: the character of each single-CJK-character token, "" elsewhere."""
    chars = np.full(len(tokens), "", dtype="<U1")
    for i, token in enumerate(tokens.tolist()):
        if len(token) == 1 and any(lo <= ord(token) <= hi for lo, hi in CJK_RANGES):
            chars[i] = token
    return chars


@functools.cache
def load_segmenter(name: str):
    """The `cut(text) -> list[str]` of a segmenter, or a one-line UsageError when it is not installed."""
    if name not in SEGMENTERS:
        raise UsageError(f"unknown word segmenter {name!r}: choose one of {', '.join(SEGMENTERS)}")
    try:
        import jieba
    except ImportError:
        raise UsageError(
            "--whole-word-mask on Chinese pairs (built with --language zh) needs the jieba word segmenter: "
            "pip install jieba (or corpusprep[zh])"
        ) from None
    import logging

    jieba.setLogLevel(logging.WARNING)  # it announces loading its dictionary on stderr
    return jieba.lcut


def chinese_continuations(ids: np.ndarray, chars: np.ndarray, cut) -> np.ndarray:
    """bool grid like `ids`: True at a CJK character that continues the word begun before it."""
    is_cjk = chars[ids] != ""
    flat = is_cjk.ravel()
    continuation = np.zeros(flat.size, bool)
    # Runs of CJK tokens never cross rows or segments: every row ends with [SEP] or [PAD], not CJK.
    edges = np.flatnonzero(np.diff(flat.astype(np.int8), prepend=0, append=0))
    flat_ids = ids.ravel()
    for start, end in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
        if end - start < 2:
            continue
        position = start
        for word in cut("".join(chars[flat_ids[start:end]].tolist())):
            continuation[position + 1 : position + len(word)] = True
            position += len(word)
    return continuation.reshape(ids.shape)
