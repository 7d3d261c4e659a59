"""`span` (SpanBERT, Joshi et al. 2020): runs of whole words, one 80/10/10 choice per span (`choose_spans`).
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

from dataclasses import dataclass

import numpy as np

from corpusprep.mask.examples import pad_rows
from corpusprep.mask.mlm import word_lengths
from corpusprep.mask.strategies.base import Strategy

SPAN_P, SPAN_MAX_WORDS = 0.2, 10  # SpanBERT's geometric span lengths (in words) and their upper limit
SPAN_PROBS = SPAN_P * (1 - SPAN_P) ** np.arange(SPAN_MAX_WORDS)
SPAN_PROBS /= SPAN_PROBS.sum()  # P(length = 1 + i)
SPAN_CDF = np.cumsum(SPAN_PROBS)
STEPS = np.arange(SPAN_MAX_WORDS)  # a span's words after its start
TRIES = 4  # draws per round of a span's start word before counting the row's words (choose_spans)


@dataclass(frozen=True)
class Spans:
    """Spans chosen by `choose_spans`, in row-major order: the flat grid cell of each span's first token, its
    tokens, its words, and the length in words drawn for it (>= words: a span may end early)."""

    start: np.ndarray  # int64
    tokens: np.ndarray  # int64
    words: np.ndarray  # int64
    drawn: np.ndarray  # int64


def choose_spans(
    start: np.ndarray, candidate: np.ndarray, budget: np.ndarray, rng: np.random.Generator
) -> Spans:
    """SpanBERT's span choice (see the module docstring), in rounds over the batch: in each round every row
    with budget left draws one span. A row gains at least one word per round or stops (no word left that
    fits), so there are at most max(budget) rounds."""
    grid = _WordGrid.of(start, candidate)
    left = np.asarray(budget, np.int64).copy()
    rows = np.flatnonzero(left > 0) if grid.words else np.zeros(0, np.int64)
    found: list[tuple[np.ndarray, ...]] = []
    while len(rows):
        u = rng.random((len(rows), TRIES + 2))
        rows, word, u = grid.draw_starts(rows, u, left)
        if not len(rows):
            break
        drawn = np.minimum(np.searchsorted(SPAN_CDF, u[:, -1], side="right"), SPAN_MAX_WORDS - 1) + 1
        span_tokens, length = grid.take_span(rows, word, drawn, left)
        left[rows] -= span_tokens
        found.append((grid.cell.ravel()[word], span_tokens, length, drawn))
        rows = rows[left[rows] > 0]
    if not found:
        empty = np.zeros(0, np.int64)
        return Spans(empty, empty, empty, empty)
    parts = [np.concatenate(p).astype(np.int64) for p in zip(*found, strict=True)]
    order = np.argsort(parts[0], kind="stable")
    return Spans(*(p[order] for p in parts))


@dataclass
class _WordGrid:
    """Each row's words as a [rows, words] grid (flat): first cell; tokens, set past any budget (`never`)
    beyond the row's last word and once a word is taken, so that "fits the budget left" also says "exists
    and is free"; and whether the next word is in the same run of candidates."""

    per_row: np.ndarray  # words in each row
    words: int  # the most words of a row: the grid's width
    never: int  # a word size past any budget
    cell: np.ndarray  # [rows, words] the flat cell of each word's first token
    size: np.ndarray  # [rows * words] tokens of each word (`never`: no word, or taken)
    same_run: np.ndarray  # [rows * words] the next word is in the same run

    @classmethod
    def of(cls, start: np.ndarray, candidate: np.ndarray) -> _WordGrid:
        n, width = start.shape
        word_length = word_lengths(start, candidate)
        first = np.flatnonzero(start)  # every word's first cell, row-major
        per_row = np.bincount(first // width, minlength=n)
        words = int(per_row.max(initial=0))
        # Runs of candidates between non-candidates ([CLS], [SEP], [PAD]): a span stays inside one. A run
        # never spans two rows, as every row ends in a non-candidate.
        flat_candidate = candidate.ravel()
        run = np.cumsum(flat_candidate & ~np.r_[False, flat_candidate[:-1]])
        never = width + 1
        run_of = pad_rows(run[first], per_row, words, fill=-1).ravel()
        same_run = np.zeros(n * words, bool)  # False after a row's last word: its run ends there
        same_run[:-1] = run_of[1:] == run_of[:-1]
        return cls(per_row, words, never, pad_rows(first, per_row, words),
                   pad_rows(word_length[first], per_row, words, fill=never).ravel(), same_run)

    def draw_starts(self, rows: np.ndarray, u: np.ndarray, left: np.ndarray) -> tuple[np.ndarray, ...]:
        """The start of each row's span: a free word that fits the budget left, uniformly. First by rejection
        (the first of TRIES uniform draws in `u` that qualifies), and for rows where all TRIES fail by
        counting every word (rows where none qualifies are done, dropped with their draws). Either way
        uniform among the qualifying words, and cheap: the count reads the whole row of words, the draws only
        TRIES of them. Returns (rows, start word, u) of the rows that go on."""
        words = self.words
        base = rows * words  # flat index of each row's first word
        tries = base[:, None] + (u[:, :TRIES] * self.per_row[rows, None]).astype(np.int64)
        ok = self.size[tries] <= left[rows, None]
        word = tries[np.arange(len(rows)), ok.argmax(axis=1)]
        missed = np.flatnonzero(~ok.any(axis=1))
        if not len(missed):
            return rows, word, u
        m = rows[missed]
        count = np.cumsum(self.size.reshape(-1, words)[m] <= left[m, None], axis=1)
        pick = (u[missed, TRIES] * count[:, -1]).astype(np.int64)  # the pick-th word that qualifies
        word[missed] = base[missed] + (count <= pick[:, None]).sum(axis=1)
        keep = np.ones(len(rows), bool)
        keep[missed[count[:, -1] == 0]] = False
        return rows[keep], word[keep], u[keep]

    def take_span(self, rows: np.ndarray, word: np.ndarray, drawn: np.ndarray,
                  left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The span from each row's start `word`: it and the words after it while the drawn length, the run
        (the link from the word before), the row's end and the free words last, then as many as fit the
        budget. Marks its words taken; returns its tokens and words."""
        base = rows * self.words
        at = np.minimum(word[:, None] + STEPS, base[:, None] + self.words - 1)
        tokens = self.size[at]
        extend = (drawn[:, None] > STEPS) & (tokens < self.never)
        extend[:, 1:] &= self.same_run[at[:, :-1]]
        extend = np.logical_and.accumulate(extend, axis=1)
        tokens = np.cumsum(np.where(extend, tokens, 0), axis=1)
        extend &= tokens <= left[rows, None]  # the longest prefix of whole words that fits
        length = extend.sum(axis=1)  # >= 1: the first word fits
        self.size[at[extend]] = self.never  # taken
        return tokens[np.arange(len(rows)), length - 1], length


class Span(Strategy):
    name, whole_words, exact_budget = "span", True, False

    def choose(self, start, candidate, budget, rng):
        spans = choose_spans(start, candidate, budget, rng)
        chosen = np.zeros(start.size, bool)  # flat: chosen spans, marked at their first token
        chosen[spans.start] = True
        word_length = np.zeros(start.size, np.int64)
        word_length[spans.start] = spans.tokens  # a span is decided and laid out as one word
        return chosen, word_length


STRATEGY = Span()
