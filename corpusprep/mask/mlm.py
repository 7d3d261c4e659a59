"""BERT's masked-LM corruption, vectorised over a whole batch of examples at once, by one of three strategies.

Per example, `min(max_predictions_per_seq, max(1, round(n_tokens * masked_lm_prob)))` positions (n_tokens
counts the specials, as in Google's create_pretraining_data.py) are chosen among every token but
[CLS]/[SEP]/[PAD] and the reserved `[unusedN]` ([UNK] is a candidate); 80% become [MASK], 10% a random
non-special token (never the original one), 10% stay. The strategy (a module of
corpusprep.mask.strategies) says what is chosen:

- `token` (BERT): every token is its own word. Words are visited in random order and taken while they fit the
  budget (a word that would overshoot is skipped, as in the reference).
- `whole-word`: the same, but a word's `##` pieces are chosen together and the 80/10/10 choice is made once
  per word (the reference decides per piece: google-research/bert#910); with a word segmenter (Chinese), the
  characters of a word are grouped the same way (see corpusprep.mask.words).
- `span` (SpanBERT, Joshi et al. 2020): runs of whole words, one 80/10/10 choice per span
  (corpusprep.mask.strategies.span).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from corpusprep.mask import strategies
from corpusprep.mask.examples import Examples, pad_rows, unpad_rows
from corpusprep.mask.words import chinese_continuations, cjk_characters, load_segmenter
from corpusprep.tokenize import VocabInfo

MASK, RANDOM, KEEP = 0, 1, 2
ACTIONS = ("mask_token", "random_token", "kept_token")


@dataclass(frozen=True)
class MaskVocab:
    """What masking needs from a vocab, as lookup tables (small and picklable for worker processes)."""

    cls_id: int
    sep_id: int
    pad_id: int
    mask_id: int
    candidate: np.ndarray  # bool[size]: may be chosen for prediction
    continuation: np.ndarray  # bool[size]: `##` piece
    random_ids: np.ndarray  # ids a random replacement is drawn from (non-special)
    segmenter: str | None = None  # groups CJK characters into words for whole-word masking: "jieba"
    cjk_chars: np.ndarray | None = None  # <U1[size]: the character of single-CJK-character tokens, else ""

    @classmethod
    def from_vocab(cls, vocab: VocabInfo, segmenter: str | None = None) -> MaskVocab:
        """`segmenter`: a word segmenter for CJK text (checked installed now, a UsageError if not)."""
        # [UNK] is a real word position (Google masks it too); the other specials and [unusedN] never occur
        # inside a segment, or must not be predicted if they do.
        candidate = ~vocab.is_special
        candidate[vocab.unk_id] = True
        if segmenter is not None:
            load_segmenter(segmenter)
        return cls(
            vocab.cls_id, vocab.sep_id, vocab.pad_id, vocab.mask_id, candidate, vocab.is_continuation,
            vocab.random_token_ids, segmenter,
            None if segmenter is None else cjk_characters(vocab.token_array),
        )

    @property
    def forbidden_in_segment(self) -> np.ndarray:
        forbidden = np.zeros(len(self.candidate), bool)
        forbidden[[self.cls_id, self.sep_id, self.pad_id]] = True
        return forbidden

    @property
    def token_dtype(self) -> np.dtype:
        """The narrowest dtype that holds every id (the vocab's, as `VocabInfo.token_dtype`)."""
        return np.dtype(np.uint16) if len(self.candidate) <= 2**16 else np.dtype(np.uint32)


@dataclass(frozen=True)
class Masking:
    """What a masking pass does: the shards' masked_lm_prob, max_predictions_per_seq and mask strategy (a
    name in corpusprep.mask.strategies)."""

    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    strategy: str = strategies.DEFAULT


@dataclass(frozen=True)
class Masked:
    """Masked examples plus their predictions, padded like the examples: example i predicts
    `labels[i, :predicted[i]]` at `positions[i, :predicted[i]]` (ascending columns of `examples.ids`)."""

    examples: Examples  # ids after corruption
    positions: np.ndarray  # uint16 [n, k]
    labels: np.ndarray  # token dtype [n, k]: the original token at each position
    actions: np.ndarray  # int8 [n, k]: MASK / RANDOM / KEEP per prediction
    predicted: np.ndarray  # int64[n]: predictions per example

    def __len__(self) -> int:
        return len(self.predicted)

    def counts(self) -> dict[str, int]:
        per_action = np.bincount(unpad_rows(self.actions, self.predicted), minlength=3)
        return {name: int(per_action[i]) for i, name in enumerate(ACTIONS)}

    def take(self, rows: np.ndarray | slice) -> Masked:
        return Masked(
            self.examples.take(rows), self.positions[rows], self.labels[rows], self.actions[rows],
            self.predicted[rows],
        )


def num_predictions(lengths: np.ndarray, masked_lm_prob: float, max_predictions_per_seq: int) -> np.ndarray:
    # np.round rounds half to even, like Python's round() in the reference.
    wanted = np.maximum(1, np.round(lengths * masked_lm_prob).astype(np.int64))
    return np.minimum(max_predictions_per_seq, wanted)


def word_lengths(start: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """int64, flat over the grid: at each word's first token, the tokens in that word."""
    # A word runs up to the next boundary (a word start or a non-candidate). Every row ends in a non-candidate
    # ([SEP] or [PAD]), so on the flattened grid the next boundary is always in the same row.
    boundary = np.flatnonzero(start | ~candidate)
    length = np.zeros(start.size, np.int64)
    length[boundary] = np.diff(boundary, append=start.size)
    return length


def _word_order(start: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each row's word starts in random order: (sorted keys, the bits of a key that hold the column).

    A key is random high bits | the column; cells that start no word get the dtype's maximum and sort last
    (a real key never has all column bits set, as the columns stop below 2**bits - 1). Sorting integer rows
    is SIMD-fast in numpy, far faster than argsort, and uint32 keys twice as fast again: used up to 255
    columns, where 24 random bits make a tie at the budget's cut-off (broken towards the earlier column) a
    < 2e-5 event per example; wider rows get uint64 keys.
    """
    width = start.shape[1]
    bits = width.bit_length()
    dtype = np.dtype(np.uint32 if bits <= 8 else np.uint64)
    column = dtype.type((1 << bits) - 1)
    raw = rng.bit_generator.random_raw(-(-start.size * dtype.itemsize // 8)).view(dtype)[: start.size]
    keys = raw.reshape(start.shape) & ~column
    keys |= np.arange(width, dtype=dtype)
    keys[~start] = np.iinfo(dtype).max
    keys.sort(axis=1)
    return keys, column


def word_starts(ids: np.ndarray, vocab: MaskVocab, whole_words: bool) -> tuple[np.ndarray, np.ndarray]:
    """(candidate, start) grids like `ids`: may be chosen; first token of a word (every candidate, or with
    `whole_words` every candidate that does not continue the word before it)."""
    candidate = vocab.candidate[ids]  # the padding is [PAD]: never a candidate
    start = candidate.copy()
    if whole_words:  # a `##` piece right after a candidate continues that word
        continues = vocab.continuation[ids]
        if vocab.segmenter is not None:  # ... and so does a CJK character inside a segmented word
            continues |= chinese_continuations(ids, vocab.cjk_chars, load_segmenter(vocab.segmenter))
        start[:, 1:] &= ~(continues[:, 1:] & candidate[:, :-1])
    return candidate, start


def mask_examples(
    examples: Examples,
    vocab: MaskVocab,
    rng: np.random.Generator,
    *,
    masking: Masking = Masking(),
) -> Masked:
    """Mask a batch as `masking` says (its strategy, share and cap); the same examples and generator state
    give the same result."""
    chosen_by = strategies.get(masking.strategy)
    ids, n, width = examples.ids, len(examples), examples.ids.shape[1]
    candidate, start = word_starts(ids, vocab, whole_words=chosen_by.whole_words)
    budget = num_predictions(examples.lengths, masking.masked_lm_prob, masking.max_predictions_per_seq)
    chosen, word_length = chosen_by.choose(start, candidate, budget, rng)

    # One 80/10/10 decision per chosen word, shared by its pieces (a word's pieces are the cells after it).
    words = np.flatnonzero(chosen)  # row-major: ascending within each example
    u = rng.random(len(words))
    lengths = np.ones(len(words), np.int64) if word_length is None else word_length[words]
    flat = np.repeat(words - (np.cumsum(lengths) - lengths), lengths) + np.arange(lengths.sum())
    actions = np.repeat((u >= 0.8).astype(np.int8) + (u >= 0.9), lengths)
    labels = ids.ravel()[flat]

    out = ids.copy()
    out.ravel()[flat[actions == MASK]] = vocab.mask_id
    replace_at = flat[actions == RANDOM]
    drawn = vocab.random_ids[rng.integers(0, len(vocab.random_ids), len(replace_at))]
    # A random draw equal to the original would be indistinguishable from a kept token in the output, so its
    # [MASK]/random/kept counts could not be checked from the files: draw again.
    while (same := drawn == ids.ravel()[replace_at]).any():
        drawn[same] = vocab.random_ids[rng.integers(0, len(vocab.random_ids), int(same.sum()))]
    out.ravel()[replace_at] = drawn

    row = flat // width
    predicted = np.bincount(row, minlength=n)
    k = int(predicted.max(initial=0))
    return Masked(
        replace(examples, ids=out),
        pad_rows((flat - row * width).astype(np.uint16), predicted, k),
        pad_rows(labels, predicted, k),
        pad_rows(actions, predicted, k),
        predicted,
    )


def choose_words(
    start: np.ndarray, candidate: np.ndarray, budget: np.ndarray, rng: np.random.Generator, whole_words: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Token and whole-word choice: (flat bool marking each chosen word's first token, flat word lengths or
    None when every word is one token)."""
    n, width = start.shape
    keys, column = _word_order(start, rng)
    # Take words in that order while they fit the budget (a word that would overshoot is skipped): one step
    # per rank, over all examples at once. Without whole-word masking this ends after max(budget) steps.
    word_length = word_lengths(start, candidate) if whole_words else None  # None: all 1
    row_start = np.arange(n) * width  # flat index of each row's first cell
    filled = np.zeros(n, np.int64)
    chosen = np.zeros(start.size, bool)  # flat: chosen words, marked at their first token
    empty = np.iinfo(keys.dtype).max
    for key in keys.T:
        present = key != empty
        if not (present & (filled < budget)).any():
            break
        word = row_start + np.where(present, key & column, 0).astype(np.intp)
        length = 1 if word_length is None else word_length[word]
        take = present & (filled + length <= budget)
        filled += take * length
        chosen[word[take]] = True
    return chosen, word_length
