"""BERT's masked-LM corruption, vectorised over a whole batch of examples at once.

Per example, `min(max_predictions_per_seq, max(1, round(n_tokens * masked_lm_prob)))` positions (n_tokens
counts the specials, as in Google's create_pretraining_data.py) are chosen among every token but
[CLS]/[SEP]/[PAD]; 80% become [MASK], 10% a random non-special token, 10% stay. Words are visited in random
order and taken while they fit the budget (a word that would overshoot is skipped, as in the reference).
Without whole-word masking every token is its own word. With it, a word's `##` pieces are chosen together and
the 80/10/10 choice is made once per word (the reference decides per piece: google-research/bert#910).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from corpusprep.mask.examples import Examples
from corpusprep.tokenize import VocabInfo

MASK, RANDOM, KEEP = 0, 1, 2
ACTIONS = ("mask_token", "random_token", "kept_token")
_COLUMN = np.uint64(2**16 - 1)  # low bits of a sort key hold the word's column; max_seq_length <= 65,535
_EMPTY = np.uint64(np.iinfo(np.uint64).max)


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

    @classmethod
    def from_vocab(cls, vocab: VocabInfo) -> MaskVocab:
        # [UNK] is a real word position (Google masks it too); the other specials and [unusedN] never occur
        # inside a segment, or must not be predicted if they do.
        candidate = ~vocab.is_special
        candidate[vocab.unk_id] = True
        return cls(
            vocab.cls_id, vocab.sep_id, vocab.pad_id, vocab.mask_id, candidate, vocab.is_continuation,
            vocab.random_token_ids,
        )

    @property
    def forbidden_in_segment(self) -> np.ndarray:
        forbidden = np.zeros(len(self.candidate), bool)
        forbidden[[self.cls_id, self.sep_id, self.pad_id]] = True
        return forbidden


@dataclass(frozen=True)
class Masked:
    """Masked examples plus their predictions: example i predicts `labels[pred_offsets[i]:pred_offsets[i+1]]`
    at `positions[...]` (ascending, relative to the example start)."""

    examples: Examples  # ids after corruption
    positions: np.ndarray  # int64, flat
    labels: np.ndarray  # token dtype, flat: the original token at each position
    pred_offsets: np.ndarray  # int64[n + 1]
    actions: np.ndarray  # int8, flat: MASK / RANDOM / KEEP per prediction

    def counts(self) -> dict[str, int]:
        per_action = np.bincount(self.actions, minlength=3)
        return {name: int(per_action[i]) for i, name in enumerate(ACTIONS)}


def num_predictions(lengths: np.ndarray, masked_lm_prob: float, max_predictions_per_seq: int) -> np.ndarray:
    # np.round rounds half to even, like Python's round() in the reference.
    wanted = np.maximum(1, np.round(lengths * masked_lm_prob).astype(np.int64))
    return np.minimum(max_predictions_per_seq, wanted)


def mask_examples(
    examples: Examples,
    vocab: MaskVocab,
    rng: np.random.Generator,
    *,
    masked_lm_prob: float = 0.15,
    max_predictions_per_seq: int = 20,
    whole_word_mask: bool = False,
) -> Masked:
    ids, offsets, n = examples.ids, examples.offsets, len(examples)
    token_example = examples.example_of_token
    candidate = vocab.candidate[ids]
    starts = candidate.copy()
    if whole_word_mask:  # a `##` piece right after a candidate continues that word
        starts[1:] &= ~(vocab.continuation[ids[1:]] & candidate[:-1])
    word_start = np.flatnonzero(starts)
    word_of_token = np.cumsum(starts) - 1  # meaningful on candidates only
    word_len = np.bincount(word_of_token[candidate], minlength=len(word_start))
    word_example = token_example[word_start]
    words_per_example = np.bincount(word_example, minlength=n)
    first_word = np.cumsum(words_per_example) - words_per_example
    column = np.arange(len(word_start)) - first_word[word_example]

    # Random order of each example's words: sort rows of (random high bits | column) keys. Sorting integer
    # keys by value is SIMD-fast in numpy, far faster than argsort of random floats.
    width = int(words_per_example.max(initial=0))
    keys = np.full((n, width), _EMPTY, np.uint64)
    raw = rng.bit_generator.random_raw(len(word_start))
    keys.ravel()[word_example * width + column] = (raw & ~_COLUMN) | column.astype(np.uint64)
    keys.sort(axis=1)

    budget = num_predictions(examples.lengths, masked_lm_prob, max_predictions_per_seq)
    filled = np.zeros(n, np.int64)
    chosen = np.zeros(len(word_start), bool)
    for col in range(width):
        present = col < words_per_example
        word = np.where(present, first_word + (keys[:, col] & _COLUMN).astype(np.int64), 0)
        length = np.where(present, word_len[word], 0)
        take = present & (filled + length <= budget)
        filled += np.where(take, length, 0)
        chosen[word[take]] = True
        if not ((filled < budget) & (col + 1 < words_per_example)).any():
            break

    # One 80/10/10 decision per chosen word, shared by its pieces.
    u = rng.random(int(chosen.sum()))
    word_action = np.full(len(word_start), -1, np.int8)
    word_action[chosen] = (u >= 0.8).astype(np.int8) + (u >= 0.9)
    flat = np.flatnonzero(candidate & chosen[np.maximum(word_of_token, 0)])
    actions = word_action[word_of_token[flat]]
    labels = ids[flat]

    out = ids.copy()
    out[flat[actions == MASK]] = vocab.mask_id
    replace = flat[actions == RANDOM]
    drawn = vocab.random_ids[rng.integers(0, len(vocab.random_ids), len(replace))]
    # A random draw equal to the original would be indistinguishable from a kept token in the output, so its
    # [MASK]/random/kept counts could not be checked from the files: draw again.
    while (same := drawn == ids[replace]).any():
        drawn[same] = vocab.random_ids[rng.integers(0, len(vocab.random_ids), int(same.sum()))]
    out[replace] = drawn

    pred_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(token_example[flat], minlength=n), out=pred_offsets[1:])
    positions = flat - offsets[token_example[flat]]
    masked = Examples(out, offsets, examples.len_a, examples.is_random_next)
    return Masked(masked, positions, labels, pred_offsets, actions)
