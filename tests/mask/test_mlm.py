"""Masked-LM corruption: BERT's statistics on 100,000+ real-token examples, whole-word masking, seeds."""

from __future__ import annotations

import numpy as np
import pytest

from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError
from corpusprep.mask import MaskVocab, concat_segments, examples_from_pairs, mask_examples, num_predictions
from corpusprep.mask.mlm import KEEP, MASK, RANDOM
from corpusprep.tokenize import VocabInfo
from tests.shard.realistic import make_pairs

N = 100_000


@pytest.fixture(scope="module")
def vocab(vocab_dir) -> VocabInfo:
    return VocabInfo.load(vocab_dir)


@pytest.fixture(scope="module")
def mask_vocab(vocab) -> MaskVocab:
    return MaskVocab.from_vocab(vocab)


@pytest.fixture(scope="module")
def examples(stream, vocab, mask_vocab):
    return examples_from_pairs(
        make_pairs(stream, N, seed=1), cls_id=vocab.cls_id, sep_id=vocab.sep_id,
        forbidden=mask_vocab.forbidden_in_segment, max_seq_length=128, dtype=vocab.token_dtype, source="t",
    )


def check_predictions(masked, original, mask_vocab):
    """Invariants any masking must keep: labels are the originals, only predicted positions change."""
    ex = masked.examples
    flat = ex.offsets[np.repeat(np.arange(len(ex)), np.diff(masked.pred_offsets))] + masked.positions
    assert np.array_equal(masked.labels, original.ids[flat])
    assert mask_vocab.candidate[masked.labels].all()  # never [CLS]/[SEP]/[PAD]
    unchanged = np.ones(len(ex.ids), bool)
    unchanged[flat] = False
    assert np.array_equal(ex.ids[unchanged], original.ids[unchanged])
    shown = ex.ids[flat]
    assert (shown[masked.actions == MASK] == mask_vocab.mask_id).all()
    assert (shown[masked.actions == KEEP] == masked.labels[masked.actions == KEEP]).all()
    random = shown[masked.actions == RANDOM]
    assert mask_vocab.candidate[random].all() and (random != masked.labels[masked.actions == RANDOM]).all()
    within = np.diff(masked.positions)
    same_example = np.diff(np.repeat(np.arange(len(ex)), np.diff(masked.pred_offsets))) == 0
    assert (within[same_example] > 0).all()  # ascending inside an example
    return flat


def test_bert_statistics_on_100k_examples(examples, mask_vocab):
    assert len(examples) >= 100_000
    budget = num_predictions(examples.lengths, 0.15, 20)
    assert (budget < 20).all()  # lengths <= 128: the cap never binds, so the rate is the target
    masked = mask_examples(examples, mask_vocab, rng_for(7, "mask", "test"))
    check_predictions(masked, examples, mask_vocab)
    assert np.array_equal(np.diff(masked.pred_offsets), budget)
    assert abs(len(masked.labels) / len(examples.ids) - 0.15) < 0.005  # specials counted in the denominator
    share = np.bincount(masked.actions, minlength=3) / len(masked.actions)
    assert np.allclose(share, [0.8, 0.1, 0.1], atol=0.01)
    # Positions are spread uniformly over the candidates: A and B are hit in proportion to their size.
    example = np.repeat(np.arange(len(examples)), np.diff(masked.pred_offsets))
    in_b = masked.positions >= (examples.len_a + 2)[example]
    b_share = (examples.lengths - examples.len_a - 3).sum() / (examples.lengths - 3).sum()
    assert abs(in_b.mean() - b_share) < 0.01


def test_cap_binds(examples, mask_vocab):
    masked = mask_examples(examples, mask_vocab, rng_for(7, "mask", "cap"), max_predictions_per_seq=5)
    counts = np.diff(masked.pred_offsets)
    assert np.array_equal(counts, np.minimum(5, num_predictions(examples.lengths, 0.15, 20)))
    check_predictions(masked, examples, mask_vocab)


def test_whole_word_masking_chooses_words_and_decides_once_per_word(examples, mask_vocab):
    masked = mask_examples(examples, mask_vocab, rng_for(7, "mask", "wwm"), whole_word_mask=True)
    flat = check_predictions(masked, examples, mask_vocab)
    ids = examples.ids
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
    action = np.full(len(ids), -1)
    action[flat] = masked.actions
    per_word = np.zeros((len(pieces), 3), np.int64)
    np.add.at(per_word, (word[flat], masked.actions), 1)
    decided = per_word[hit]
    assert ((decided > 0).sum(axis=1) == 1).all()
    word_share = (decided > 0).sum(axis=0) / hit.sum()
    assert np.allclose(word_share, [0.8, 0.1, 0.1], atol=0.01)
    counts = np.diff(masked.pred_offsets)
    assert (counts <= num_predictions(examples.lengths, 0.15, 20)).all()
    # As in the reference, a word longer than the budget is skipped, so a very short example whose words
    # are all multi-piece can end up with no prediction: rare.
    assert (counts == 0).mean() < 0.001
    assert abs(len(masked.labels) / len(ids) - 0.15) < 0.005


def test_same_generator_same_masking_other_seed_differs(examples, mask_vocab):
    one = mask_examples(examples, mask_vocab, rng_for(1, "mask", 0))
    again = mask_examples(examples, mask_vocab, rng_for(1, "mask", 0))
    other = mask_examples(examples, mask_vocab, rng_for(2, "mask", 0))
    assert np.array_equal(one.examples.ids, again.examples.ids)
    assert np.array_equal(one.positions, again.positions)
    assert not np.array_equal(one.positions, other.positions)


def test_layout_of_cls_a_sep_b_sep():
    a_off, a = np.array([0, 2, 3]), np.array([10, 11, 12], np.uint16)
    b_off, b = np.array([0, 1, 4]), np.array([20, 21, 22, 23], np.uint16)
    ex = concat_segments(a_off, a, b_off, b, cls_id=1, sep_id=2, dtype=np.dtype(np.uint16))
    assert ex.ids.tolist() == [1, 10, 11, 2, 20, 2, 1, 12, 2, 21, 22, 23, 2]
    assert ex.token_type_ids().tolist() == [0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1]
    assert ex.offsets.tolist() == [0, 6, 13]


def test_bad_pairs_name_the_file_and_row(stream, vocab, mask_vocab):
    table = make_pairs(stream, 50, seed=3)
    kwargs = dict(cls_id=vocab.cls_id, sep_id=vocab.sep_id, forbidden=mask_vocab.forbidden_in_segment,
                  dtype=vocab.token_dtype, source="p.parquet", first_row=100)
    with pytest.raises(DataError, match=r"p\.parquet row 1\d\d: .*longer than max_seq_length 64"):
        examples_from_pairs(table, max_seq_length=64, **kwargs)
    a = table.column("tokens_a").combine_chunks()
    values = a.values.to_numpy().copy()
    values[a.offsets.to_numpy()[7]] = vocab.sep_id  # a [SEP] inside segment A of row 7
    import pyarrow as pa

    bad = table.set_column(0, "tokens_a", pa.ListArray.from_arrays(a.offsets, pa.array(values)))
    with pytest.raises(DataError, match=r"p\.parquet row 107: segment A"):
        examples_from_pairs(bad, max_seq_length=128, **kwargs)
