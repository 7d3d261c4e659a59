"""BERT's masked-LM corruption, vectorised over a whole batch of examples at once, by one of three strategies.

Per example, `min(max_predictions_per_seq, max(1, round(n_tokens * masked_lm_prob)))` positions (n_tokens
counts the specials, as in Google's create_pretraining_data.py) are chosen among every token but
[CLS]/[SEP]/[PAD] and the reserved `[unusedN]` ([UNK] is a candidate); 80% become [MASK], 10% a random
non-special token (never the original one), 10% stay. The strategy (`corpusprep.objectives.MASK_STRATEGIES`)
says what is chosen:

- `token` (BERT): every token is its own word. Words are visited in random order and taken while they fit the
  budget (a word that would overshoot is skipped, as in the reference).
- `whole-word`: the same, but a word's `##` pieces are chosen together and the 80/10/10 choice is made once
  per word (the reference decides per piece: google-research/bert#910); with a word segmenter (Chinese), the
  characters of a word are grouped the same way (see corpusprep.mask.words).
- `span` (SpanBERT, Joshi et al. 2020): runs of whole words, one 80/10/10 choice per span (`choose_spans`).
  Span lengths in words are drawn from the geometric distribution p = 0.2 truncated at 10 words and
  renormalised, as SpanBERT's code does (P(1) = 0.224, mean 3.80: the paper's "clipped at 10, mean 3.8").
  A span starts at a uniformly drawn word not yet chosen that fits the budget left (SpanBERT draws an anchor
  and redraws when it is masked already: the same distribution, without wasted draws) and takes the words
  after it up to the drawn length, ending early at the end of its segment (a [SEP]: a span never crosses
  one), before a word already chosen (spans never overlap) or before a word that would overshoot the budget.
  So the lengths kept are shorter than the lengths drawn, the more so the smaller the budget and the shorter
  the segments (SpanBERT's code also cuts the last span at the budget). Measured on English Wikipedia pairs
  (bert-base-uncased, BERT's length profile): mean 3.06 words (P(1) = 0.31) on rows of 128 tokens at 15% (cap
  20), 3.46 (P(1) = 0.26) on rows of 512 (cap 80); 3.02 and 3.22 at 40%. tests/mask/test_span.py checks the
  drawn lengths against the distribution and that every shorter span stopped for one of these reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from corpusprep.errors import UsageError
from corpusprep.mask.examples import Examples, pad_rows, unpad_rows
from corpusprep.mask.words import chinese_continuations, cjk_characters, load_segmenter
from corpusprep.objectives import MASK_STRATEGIES
from corpusprep.tokenize import VocabInfo

MASK, RANDOM, KEEP = 0, 1, 2
ACTIONS = ("mask_token", "random_token", "kept_token")
SPAN_P, SPAN_MAX_WORDS = 0.2, 10  # SpanBERT's geometric span lengths (in words) and their upper limit
SPAN_PROBS = SPAN_P * (1 - SPAN_P) ** np.arange(SPAN_MAX_WORDS)
SPAN_PROBS /= SPAN_PROBS.sum()  # P(length = 1 + i)
TRIES = 4  # draws per round of a span's start word before counting the row's words (choose_spans)


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


def _word_lengths(start: np.ndarray, candidate: np.ndarray) -> np.ndarray:
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


@dataclass(frozen=True)
class Spans:
    """Spans chosen by `choose_spans`, in row-major order: the flat grid cell of each span's first token, its
    tokens, its words, and the length in words drawn for it (>= words: a span may end early)."""

    start: np.ndarray  # int64
    tokens: np.ndarray  # int64
    words: np.ndarray  # int64
    drawn: np.ndarray  # int64


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


def choose_spans(
    start: np.ndarray, candidate: np.ndarray, budget: np.ndarray, rng: np.random.Generator
) -> Spans:
    """SpanBERT's span choice (see the module docstring), in rounds over the batch: in each round every row
    with budget left draws one span. A row gains at least one word per round or stops (no word left that
    fits), so there are at most max(budget) rounds."""
    n, width = start.shape
    word_length = _word_lengths(start, candidate)
    first = np.flatnonzero(start)  # every word's first cell, row-major
    per_row = np.bincount(first // width, minlength=n)
    words = int(per_row.max(initial=0))
    # Runs of candidates between non-candidates ([CLS], [SEP], [PAD]): a span stays inside one. A run never
    # spans two rows, as every row ends in a non-candidate.
    flat_candidate = candidate.ravel()
    run = np.cumsum(flat_candidate & ~np.r_[False, flat_candidate[:-1]])
    # Each row's words as a grid: first cell; tokens, set past any budget (`never`) beyond the row's last word
    # and once a word is taken, so that "fits the budget left" also says "exists and is free"; and whether the
    # next word is in the same run.
    never = width + 1
    cell = pad_rows(first, per_row, words)
    size = pad_rows(word_length[first], per_row, words, fill=never).ravel()
    run_of = pad_rows(run[first], per_row, words, fill=-1).ravel()
    same_run = np.zeros(n * words, bool)  # False after a row's last word: its run ends there
    same_run[:-1] = run_of[1:] == run_of[:-1]
    left = np.asarray(budget, np.int64).copy()
    rows = np.flatnonzero(left > 0) if words else np.zeros(0, np.int64)
    steps = np.arange(SPAN_MAX_WORDS)
    cdf = np.cumsum(SPAN_PROBS)
    found: list[tuple[np.ndarray, ...]] = []
    while len(rows):
        # The start: a free word that fits the budget left, uniformly. First by rejection (the first of TRIES
        # uniform draws that qualifies), and for rows where all TRIES fail by counting every word (rows where
        # none qualifies are done). Either way uniform among the qualifying words, and cheap: the count reads
        # the whole row of words, the draws only TRIES of them.
        base = rows * words  # flat index of each row's first word
        u = rng.random((len(rows), TRIES + 2))
        tries = base[:, None] + (u[:, :TRIES] * per_row[rows, None]).astype(np.int64)
        ok = size[tries] <= left[rows, None]
        word = tries[np.arange(len(rows)), ok.argmax(axis=1)]
        missed = np.flatnonzero(~ok.any(axis=1))
        if len(missed):
            m = rows[missed]
            count = np.cumsum(size.reshape(n, words)[m] <= left[m, None], axis=1)
            pick = (u[missed, TRIES] * count[:, -1]).astype(np.int64)  # the pick-th word that qualifies
            word[missed] = base[missed] + (count <= pick[:, None]).sum(axis=1)
            keep = np.ones(len(rows), bool)
            keep[missed[count[:, -1] == 0]] = False
            rows, word, u, base = rows[keep], word[keep], u[keep], base[keep]
            if not len(rows):
                break
        drawn = np.minimum(np.searchsorted(cdf, u[:, -1], side="right"), SPAN_MAX_WORDS - 1) + 1
        # The span's words: the start and the words after it while the drawn length, the run (the link from
        # the word before), the row's end and the free words last, then as many as fit the budget.
        at = np.minimum(word[:, None] + steps, base[:, None] + words - 1)
        tokens = size[at]
        extend = (steps < drawn[:, None]) & (tokens < never)
        extend[:, 1:] &= same_run[at[:, :-1]]
        extend = np.logical_and.accumulate(extend, axis=1)
        tokens = np.cumsum(np.where(extend, tokens, 0), axis=1)
        extend &= tokens <= left[rows, None]  # the longest prefix of whole words that fits
        length = extend.sum(axis=1)  # >= 1: the first word fits
        span_tokens = tokens[np.arange(len(rows)), length - 1]
        size[at[extend]] = never  # taken
        left[rows] -= span_tokens
        found.append((cell.ravel()[word], span_tokens, length, drawn))
        rows = rows[left[rows] > 0]
    if not found:
        empty = np.zeros(0, np.int64)
        return Spans(empty, empty, empty, empty)
    parts = [np.concatenate(p).astype(np.int64) for p in zip(*found, strict=True)]
    order = np.argsort(parts[0], kind="stable")
    return Spans(*(p[order] for p in parts))


def mask_examples(
    examples: Examples,
    vocab: MaskVocab,
    rng: np.random.Generator,
    *,
    masked_lm_prob: float = 0.15,
    max_predictions_per_seq: int = 20,
    strategy: str = "token",
) -> Masked:
    """Mask a batch by `strategy` (one of MASK_STRATEGIES); the same examples and generator state give the
    same result."""
    if strategy not in MASK_STRATEGIES:
        raise UsageError(f"unknown mask strategy {strategy!r}: choose one of {', '.join(MASK_STRATEGIES)}")
    ids, n, width = examples.ids, len(examples), examples.ids.shape[1]
    candidate, start = word_starts(ids, vocab, whole_words=strategy != "token")
    budget = num_predictions(examples.lengths, masked_lm_prob, max_predictions_per_seq)
    if strategy == "span":
        spans = choose_spans(start, candidate, budget, rng)
        chosen = np.zeros(ids.size, bool)  # flat: chosen spans, marked at their first token
        chosen[spans.start] = True
        word_length = np.zeros(ids.size, np.int64)
        word_length[spans.start] = spans.tokens  # a span is decided and laid out as one word
    else:
        whole_words = strategy == "whole-word"
        chosen, word_length = _choose_words(start, candidate, budget, rng, whole_words=whole_words)

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


def _choose_words(
    start: np.ndarray, candidate: np.ndarray, budget: np.ndarray, rng: np.random.Generator, whole_words: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Token and whole-word choice: (flat bool marking each chosen word's first token, flat word lengths or
    None when every word is one token)."""
    n, width = start.shape
    keys, column = _word_order(start, rng)
    # Take words in that order while they fit the budget (a word that would overshoot is skipped): one step
    # per rank, over all examples at once. Without whole-word masking this ends after max(budget) steps.
    word_length = _word_lengths(start, candidate) if whole_words else None  # None: all 1
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
