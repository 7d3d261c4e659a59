"""Masked-LM corruption: BERT's statistics on 100,000+ real-token examples, whole-word masking, seeds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError
from corpusprep.mask import concat_segments, examples_from_pairs, mask_examples, num_predictions
from corpusprep.mask.examples import list_parts, pad_rows, row_mask, to_numpy, unpad_rows
from corpusprep.mask.mlm import KEEP, MASK, RANDOM, Masking
from tests.shard.realistic import make_pairs

N = 100_000


@pytest.fixture(scope="module")
def examples(stream, vocab, mask_vocab):
    return examples_from_pairs(
        make_pairs(stream, N, seed=1), vocab=mask_vocab, max_seq_length=128, source="t",
    )


def check_predictions(masked, original, mask_vocab):
    """Invariants any masking must keep: labels are the originals, only predicted positions change.
    Returns the flat index (into `original.flat_ids()`) of each prediction."""
    ex = masked.examples
    assert np.array_equal(ex.lengths, original.lengths) and np.array_equal(ex.len_a, original.len_a)
    valid = row_mask(masked.predicted, masked.positions.shape[1])
    row = np.repeat(np.arange(len(ex)), masked.predicted)
    position = masked.positions[valid].astype(np.int64)
    labels, actions = masked.labels[valid], masked.actions[valid]
    assert (position < ex.lengths[row]).all()
    assert np.array_equal(labels, original.ids[row, position])
    assert mask_vocab.candidate[labels].all()  # never [CLS]/[SEP]/[PAD]
    unchanged = np.ones(ex.ids.shape, bool)
    unchanged[row, position] = False
    assert np.array_equal(ex.ids[unchanged], original.ids[unchanged])
    shown = ex.ids[row, position]
    assert (shown[actions == MASK] == mask_vocab.mask_id).all()
    assert (shown[actions == KEEP] == labels[actions == KEEP]).all()
    random = shown[actions == RANDOM]
    assert mask_vocab.candidate[random].all() and (random != labels[actions == RANDOM]).all()
    same_example = np.diff(row) == 0
    assert (np.diff(position)[same_example] > 0).all()  # ascending inside an example
    assert np.array_equal(np.bincount(actions, minlength=3), list(masked.counts().values()))
    return original.offsets[row] + position


@pytest.mark.slow  # ~1.2 s idle
def test_bert_statistics_on_100k_examples(examples, mask_vocab):
    assert len(examples) >= 100_000
    budget = num_predictions(examples.lengths, 0.15, 20)
    assert (budget < 20).all()  # lengths <= 128: the cap never binds, so the rate is the target
    masked = mask_examples(examples, mask_vocab, rng_for(7, "mask", "test"))
    flat = check_predictions(masked, examples, mask_vocab)
    assert np.array_equal(masked.predicted, budget)
    assert abs(len(flat) / examples.lengths.sum() - 0.15) < 0.005  # specials counted in the denominator
    share = np.array(list(masked.counts().values())) / len(flat)
    assert np.allclose(share, [0.8, 0.1, 0.1], atol=0.01)
    # Positions are spread uniformly over the candidates: A and B are hit in proportion to their size, and
    # every column of a full-length example is hit as often as any other.
    example = np.repeat(np.arange(len(examples)), masked.predicted)
    position = masked.positions[row_mask(masked.predicted, masked.positions.shape[1])]
    in_b = position >= (examples.len_a + 2)[example]
    b_share = (examples.lengths - examples.len_a - 3).sum() / (examples.lengths - 3).sum()
    assert abs(in_b.mean() - b_share) < 0.01
    full = examples.lengths == 128  # 125 candidates, 19 predictions: each candidate is hit with p = 19/125
    hits = np.bincount(position[full[example]], minlength=128)[1:127]
    candidates = full.sum() - np.bincount(examples.len_a[full] + 1, minlength=128)[1:127]  # minus [SEP]s
    p = 19 / 125
    assert (np.abs(hits - p * candidates) < 5 * np.sqrt(candidates * p * (1 - p))).all()


def test_cap_binds(examples, mask_vocab):
    masked = mask_examples(examples, mask_vocab, rng_for(7, "mask", "cap"),
                           masking=Masking(max_predictions_per_seq=5))
    assert np.array_equal(masked.predicted, np.minimum(5, num_predictions(examples.lengths, 0.15, 20)))
    check_predictions(masked, examples, mask_vocab)


def test_long_examples(stream, vocab, mask_vocab):
    """Rows over 255 tokens take the uint64 sort keys: same invariants, columns past 255 hit uniformly."""
    long = examples_from_pairs(
        make_pairs(stream, 4000, seed=5, max_seq_length=400), vocab=mask_vocab, max_seq_length=400,
        source="t",
    )
    masked = mask_examples(long, mask_vocab, rng_for(7, "mask", "long"),
                           masking=Masking(max_predictions_per_seq=80))
    check_predictions(masked, long, mask_vocab)
    assert np.array_equal(masked.predicted, num_predictions(long.lengths, 0.15, 80))
    position = masked.positions[row_mask(masked.predicted, masked.positions.shape[1])]
    full = long.lengths == 400
    late = (position[np.repeat(full, masked.predicted)] >= 256).mean()
    assert abs(late - (399 - 256) / 397) < 0.01  # columns 256..398 of the 397 candidates of a full row


@pytest.mark.slow  # ~2.9 s idle
def test_whole_word_masking_chooses_words_and_decides_once_per_word(examples, mask_vocab):
    masked = mask_examples(examples, mask_vocab, rng_for(7, "mask", "wwm"),
                           masking=Masking(strategy="whole-word"))
    flat = check_predictions(masked, examples, mask_vocab)
    ids = examples.flat_ids()
    cand = mask_vocab.candidate[ids]
    # word id per candidate token: a ## piece after a candidate continues the previous word
    start = cand.copy()
    start[1:] &= ~(mask_vocab.continuation[ids[1:]] & cand[:-1])
    word = np.cumsum(start) - 1
    chosen = np.zeros(len(ids), bool)
    chosen[flat] = True
    pieces = np.bincount(word[cand], minlength=word.max() + 1)
    chosen_pieces = np.bincount(word[chosen], minlength=len(pieces))
    hit = chosen_pieces > 0
    assert np.array_equal(chosen_pieces[hit], pieces[hit])  # a word is chosen with all its pieces
    assert (pieces[hit] > 1).sum() > 10_000  # ...and multi-piece words were really exercised
    # one 80/10/10 decision per word: all pieces of a word share it
    actions = masked.actions[row_mask(masked.predicted, masked.actions.shape[1])]
    per_word = np.zeros((len(pieces), 3), np.int64)
    np.add.at(per_word, (word[flat], actions), 1)
    decided = per_word[hit]
    assert ((decided > 0).sum(axis=1) == 1).all()
    word_share = (decided > 0).sum(axis=0) / hit.sum()
    assert np.allclose(word_share, [0.8, 0.1, 0.1], atol=0.01)
    counts = masked.predicted
    assert (counts <= num_predictions(examples.lengths, 0.15, 20)).all()
    # As in the reference, a word longer than the budget is skipped, so a very short example whose words
    # are all multi-piece can end up with no prediction: rare.
    assert (counts == 0).mean() < 0.001
    assert abs(len(flat) / len(ids) - 0.15) < 0.005


def test_same_generator_same_masking_other_seed_differs(examples, mask_vocab):
    one = mask_examples(examples, mask_vocab, rng_for(1, "mask", 0))
    again = mask_examples(examples, mask_vocab, rng_for(1, "mask", 0))
    other = mask_examples(examples, mask_vocab, rng_for(2, "mask", 0))
    assert np.array_equal(one.examples.ids, again.examples.ids) and np.array_equal(one.labels, again.labels)
    assert np.array_equal(one.positions, again.positions)
    assert not np.array_equal(one.positions, other.positions)


def test_layout_of_cls_a_sep_b_sep():
    a, b = np.array([10, 11, 12], np.uint16), np.array([20, 21, 22, 23], np.uint16)
    ex = concat_segments([2, 1], a, [1, 3], b, cls_id=1, sep_id=2, pad_id=0, dtype=np.dtype(np.uint16))
    assert ex.ids.tolist() == [[1, 10, 11, 2, 20, 2, 0], [1, 12, 2, 21, 22, 23, 2]]
    assert ex.flat_ids().tolist() == [1, 10, 11, 2, 20, 2, 1, 12, 2, 21, 22, 23, 2]
    assert ex.token_type_ids().tolist() == [0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1]
    assert ex.offsets.tolist() == [0, 6, 13]
    assert ex.take(np.array([1, 0])).flat_ids().tolist() == [1, 12, 2, 21, 22, 23, 2, 1, 10, 11, 2, 20, 2]


def test_pad_rows_round_trip():
    lengths = np.array([3, 0, 5, 1])
    values = np.arange(9, dtype=np.uint16)
    grid = pad_rows(values, lengths, fill=7)
    assert grid.shape == (4, 5) and grid[1].tolist() == [7] * 5 and grid[2].tolist() == [3, 4, 5, 6, 7]
    assert np.array_equal(unpad_rows(grid, lengths), values)
    assert pad_rows(values[:0], np.zeros(0, np.int64)).shape == (0, 0)


def test_bad_pairs_name_the_file_and_row(stream, vocab, mask_vocab):
    table = make_pairs(stream, 50, seed=3)
    kwargs = dict(vocab=mask_vocab, source="p.parquet",
                  first_row=100)
    with pytest.raises(DataError, match=r"p\.parquet row 1\d\d: .*longer than max_seq_length 64"):
        examples_from_pairs(table, max_seq_length=64, **kwargs)
    a = table.column("tokens_a").combine_chunks()
    values = a.values.to_numpy().copy()
    values[a.offsets.to_numpy()[7]] = vocab.sep_id  # a [SEP] inside segment A of row 7
    bad = table.set_column(0, "tokens_a", pa.ListArray.from_arrays(a.offsets, pa.array(values)))
    with pytest.raises(DataError, match=r"p\.parquet row 107: segment A"):
        examples_from_pairs(bad, max_seq_length=128, **kwargs)


def test_arrow_to_numpy_respects_slices_and_rejects_nulls(stream, vocab, mask_vocab):
    table = make_pairs(stream, 300, seed=4)
    sliced = table.slice(120, 50)
    offsets, values = list_parts(sliced.column("tokens_a"))
    expected = sliced.column("tokens_a").to_pylist()
    assert [values[offsets[i] : offsets[i + 1]].tolist() for i in range(50)] == expected
    assert to_numpy(sliced.column("is_random_next")).tolist() == sliced.column("is_random_next").to_pylist()
    kwargs = dict(vocab=mask_vocab, max_seq_length=128)
    ex = examples_from_pairs(sliced, source="s", **kwargs)
    assert ex.flat_ids()[1 : 1 + ex.len_a[0]].tolist() == expected[0]
    holes = pa.array([[5, None, 7]] + expected[1:], pa.list_(pa.uint16()))
    with pytest.raises(DataError, match=r"p\.parquet: null values in the batch of rows from 100"):
        examples_from_pairs(sliced.set_column(0, "tokens_a", holes), source="p.parquet", first_row=100,
                            **kwargs)
