"""Span masking (SpanBERT) on 100,000 real-token examples: span lengths, rate, cap, one decision per span."""

from __future__ import annotations

import numpy as np
import pytest

from corpusprep.engine.rng import rng_for
from corpusprep.errors import UsageError
from corpusprep.mask import concat_segments, examples_from_pairs, mask_examples, num_predictions, strategies
from corpusprep.mask.mlm import Masking, word_starts
from corpusprep.mask.strategies.span import SPAN_MAX_WORDS, SPAN_P, choose_spans
from tests.mask.test_mlm import check_predictions
from tests.shard.realistic import make_pairs

N = 100_000
# SpanBERT's span lengths: geometric p = 0.2 on 1..10 words, renormalised (its code; the paper's mean 3.8)
TRUNCATED = SPAN_P * (1 - SPAN_P) ** np.arange(SPAN_MAX_WORDS) / (1 - (1 - SPAN_P) ** SPAN_MAX_WORDS)


def examples_of(stream, vocab, mask_vocab, n, max_seq_length, seed=1):
    return examples_from_pairs(
        make_pairs(stream, n, seed=seed, max_seq_length=max_seq_length), vocab=mask_vocab,
        max_seq_length=max_seq_length, source="t",
    )


@pytest.fixture(scope="module")
def examples(stream, vocab, mask_vocab):
    return examples_of(stream, vocab, mask_vocab, N, 128)


def spans_of(examples, mask_vocab, seed, prob=0.15, cap=20):
    """The spans mask_examples chooses with rng_for(seed, "span") (it draws them first), and its output."""
    candidate, start = word_starts(examples.ids, mask_vocab, whole_words=True)
    budget = num_predictions(examples.lengths, prob, cap)
    spans = choose_spans(start, candidate, budget, rng_for(seed, "span"))
    masked = mask_examples(examples, mask_vocab, rng_for(seed, "span"),
                           masking=Masking(masked_lm_prob=prob, max_predictions_per_seq=cap, strategy="span"))
    return spans, masked, candidate, start, budget


@pytest.mark.slow  # ~4.5 s idle
def test_spans_statistics_on_100k_examples(examples, mask_vocab):
    spans, masked, candidate, start, budget = spans_of(examples, mask_vocab, 1)
    flat = check_predictions(masked, examples, mask_vocab)
    # The drawn lengths follow SpanBERT's distribution: mean 3.80, P(1) = 0.224, at most 10 words.
    assert len(spans.drawn) > 100_000
    drawn = np.bincount(spans.drawn, minlength=SPAN_MAX_WORDS + 1)
    assert drawn[0] == 0 and len(drawn) == SPAN_MAX_WORDS + 1
    share = drawn[1:] / len(spans.drawn)
    assert np.all(np.abs(share - TRUNCATED) < 5 * np.sqrt(TRUNCATED * (1 - TRUNCATED) / len(spans.drawn)))
    assert abs(spans.drawn.mean() - 3.80) < 0.03
    # The lengths kept are at most those drawn: shorter at a segment's end, before another span or the budget.
    assert (spans.words >= 1).all() and (spans.words <= spans.drawn).all()
    assert 2.7 < spans.words.mean() < spans.drawn.mean()
    # Rate = budget: every example gets its budget exactly (the budget allows for a word of any length).
    assert (masked.predicted <= budget).all() and (masked.predicted == budget).mean() > 0.999
    assert abs(len(flat) / examples.lengths.sum() - 0.15) < 0.005
    # The predictions are exactly the spans' tokens.
    ids = examples.ids.ravel()
    width = examples.ids.shape[1]
    cells = np.repeat(spans.start - (np.cumsum(spans.tokens) - spans.tokens), spans.tokens) + np.arange(
        spans.tokens.sum())
    row = cells // width
    assert np.array_equal(examples.offsets[row] + cells - row * width, flat)
    # A span is whole words inside one segment: it starts a word, never holds a non-candidate ([SEP]), and
    # the token after it starts a word or is no candidate.
    assert start.ravel()[spans.start].all() and candidate.ravel()[cells].all()
    after = spans.start + spans.tokens
    assert (start.ravel()[after] | ~candidate.ravel()[after]).all()
    # Spans never overlap: each ends at or before the next span of its row.
    same_row = spans.start[1:] // width == spans.start[:-1] // width
    assert (after[:-1][same_row] <= spans.start[1:][same_row]).all()
    # A span shorter than drawn stopped for a reason: the segment ends, another span follows, or the next word
    # would overshoot the budget.
    chosen = np.zeros(ids.size, bool)
    chosen[cells] = True
    boundary = np.flatnonzero(start.ravel() | ~candidate.ravel())
    length_at = np.zeros(ids.size, np.int64)  # at a word's first token: the word's tokens
    length_at[boundary] = np.diff(boundary, append=ids.size)
    short = spans.words < spans.drawn
    at = after[short]
    short_row = spans.start[short] // width
    fill = np.bincount(row, minlength=len(examples))[short_row]
    reason = ~candidate.ravel()[at] | chosen[at] | (fill + length_at[at] > budget[short_row])
    assert short.mean() > 0.1 and reason.all()
    # One 80/10/10 decision per span, shared by all its tokens.
    actions = masked.actions[np.arange(masked.actions.shape[1]) < masked.predicted[:, None]]
    first = np.r_[0, np.cumsum(spans.tokens)[:-1]]
    assert np.array_equal(actions, np.repeat(actions[first], spans.tokens))
    per_span = np.bincount(actions[first], minlength=3) / len(first)
    assert np.allclose(per_span, [0.8, 0.1, 0.1], atol=0.01)


def test_long_rows_keep_longer_spans(stream, vocab, mask_vocab):
    """On rows of 512 the segment ends and the budget cut fewer spans: the mean comes closer to 3.8."""
    long = examples_of(stream, vocab, mask_vocab, 3000, 512, seed=4)
    spans, masked, _, _, budget = spans_of(long, mask_vocab, 2, cap=80)
    check_predictions(masked, long, mask_vocab)
    assert (masked.predicted == budget).mean() > 0.99
    short_rows, _, _, _, _ = spans_of(long.take(slice(0, 0)), mask_vocab, 2)
    assert len(short_rows.start) == 0  # an empty batch
    assert 3.2 < spans.words.mean() < 3.8


@pytest.mark.slow  # ~7.1 s idle (all cases)
@pytest.mark.parametrize("strategy", strategies.names())
def test_masked_lm_prob_04_with_a_large_cap(examples, mask_vocab, strategy):
    masking = Masking(masked_lm_prob=0.4, max_predictions_per_seq=128, strategy=strategy)
    masked = mask_examples(examples, mask_vocab, rng_for(3, strategy), masking=masking)
    flat = check_predictions(masked, examples, mask_vocab)
    assert abs(len(flat) / examples.lengths.sum() - 0.4) < 0.005
    assert np.allclose(np.array(list(masked.counts().values())) / len(flat), [0.8, 0.1, 0.1], atol=0.02)


@pytest.mark.slow  # ~2.9 s idle (all cases)
@pytest.mark.parametrize("strategy", strategies.names())
def test_cap_binds(examples, mask_vocab, strategy):
    masking = Masking(masked_lm_prob=0.4, max_predictions_per_seq=5, strategy=strategy)
    masked = mask_examples(examples, mask_vocab, rng_for(7, "cap"), masking=masking)
    check_predictions(masked, examples, mask_vocab)
    budget = num_predictions(examples.lengths, 0.4, 5)
    assert (masked.predicted <= 5).all() and (masked.predicted == budget).mean() > 0.99


def test_span_masking_ends_on_any_input(vocab, mask_vocab):
    """Rows without candidates, rows whose only words are longer than the budget, one-token segments."""
    piece = int(np.flatnonzero(mask_vocab.continuation)[0])
    word = int(np.flatnonzero(mask_vocab.candidate & ~mask_vocab.continuation)[10])
    a = np.array([word, piece, piece, piece, word, word], np.uint16)
    b = np.array([word, piece, piece, piece, piece, word, piece], np.uint16)
    ex = concat_segments([4, 1, 1], a, [5, 1, 1], b, cls_id=vocab.cls_id, sep_id=vocab.sep_id,
                         pad_id=vocab.pad_id, dtype=vocab.token_dtype)
    ex.ids[2, 1] = vocab.unk_id  # [UNK] is a candidate
    masked = mask_examples(ex, mask_vocab, rng_for(0, "edge"), masking=Masking(0.1, strategy="span"))
    check_predictions(masked, ex, mask_vocab)
    # Row 0: 12 tokens, budget 1, its words are 4 and 5 tokens long: nothing fits.
    assert masked.predicted.tolist() == [0, 1, 1]
    blank = concat_segments([1], np.array([word], np.uint16), [1], np.array([word], np.uint16),
                            cls_id=vocab.cls_id, sep_id=vocab.sep_id, pad_id=vocab.pad_id,
                            dtype=vocab.token_dtype)
    blank.ids[0, [1, 3]] = vocab.pad_id  # no candidate at all
    span = Masking(strategy="span")
    assert mask_examples(blank, mask_vocab, rng_for(0, "blank"), masking=span).predicted.tolist() == [0]
    # A span starting at the batch's last word stops there (many seeds: every start is drawn).
    tiny = concat_segments([1], np.array([word], np.uint16), [1], np.array([word + 1], np.uint16),
                           cls_id=vocab.cls_id, sep_id=vocab.sep_id, pad_id=vocab.pad_id,
                           dtype=vocab.token_dtype)
    for seed in range(40):
        masked = mask_examples(tiny, mask_vocab, rng_for(seed, "tiny"), masking=Masking(0.9, strategy="span"))
        check_predictions(masked, tiny, mask_vocab)
        assert masked.predicted.tolist() == [2]


def test_same_generator_same_spans_and_unknown_strategy(examples, mask_vocab):
    part = examples.take(slice(0, 5000))
    one = mask_examples(part, mask_vocab, rng_for(1, "s"), masking=Masking(strategy="span"))
    again = mask_examples(part, mask_vocab, rng_for(1, "s"), masking=Masking(strategy="span"))
    other = mask_examples(part, mask_vocab, rng_for(2, "s"), masking=Masking(strategy="span"))
    assert np.array_equal(one.positions, again.positions)
    assert np.array_equal(one.examples.ids, again.examples.ids)
    assert not np.array_equal(one.positions, other.positions)
    with pytest.raises(UsageError, match="unknown mask strategy 'spans'"):
        mask_examples(part, mask_vocab, rng_for(1, "s"), masking=Masking(strategy="spans"))
