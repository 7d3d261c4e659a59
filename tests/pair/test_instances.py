"""The pairing core on synthetic token arrays: the reference's rules, exact balance, truncation."""

from __future__ import annotations

import numpy as np
import pytest

from corpusprep.engine.rng import rng_for
from corpusprep.pair.instances import PartitionTokens, make_pairs, pairs_table, truncation


def synthetic_partition(
    n_docs: int, seed: int, max_sentences: int = 12, max_len: int = 40
) -> PartitionTokens:
    rng = np.random.default_rng(seed)
    per_doc = rng.integers(1, max_sentences + 1, n_docs)
    lengths = rng.integers(1, max_len + 1, per_doc.sum())
    sent_offsets = np.concatenate([[0], np.cumsum(lengths)])
    return PartitionTokens(
        tokens=rng.integers(5, 1000, sent_offsets[-1]).astype(np.uint16),
        sent_offsets=sent_offsets,
        sent_index=np.concatenate([np.arange(n, dtype=np.uint32) for n in per_doc]),
        doc_offsets=np.concatenate([[0], np.cumsum(per_doc)]),
        doc_ids=[f"doc:{d}" for d in range(n_docs)],
    )


def reference_truncation(len_a: int, len_b: int, max_tokens: int) -> tuple[int, int]:
    """google-research/bert truncate_seq_pair, counting removals instead of popping tokens."""
    cut_a = cut_b = 0
    while len_a + len_b > max_tokens:
        if len_a > len_b:
            len_a, cut_a = len_a - 1, cut_a + 1
        else:
            len_b, cut_b = len_b - 1, cut_b + 1
    return cut_a, cut_b


def test_truncation_removes_what_the_reference_removes():
    rng = np.random.default_rng(0)
    len_a, len_b = rng.integers(1, 300, 2000), rng.integers(1, 300, 2000)
    cut_a, cut_b = truncation(len_a, len_b, 125)
    expected = np.array([reference_truncation(a, b, 125) for a, b in zip(len_a, len_b, strict=True)])
    np.testing.assert_array_equal(cut_a, expected[:, 0])
    np.testing.assert_array_equal(cut_b, expected[:, 1])


@pytest.fixture(scope="module")
def pass_pairs():
    part = synthetic_partition(600, seed=1)
    return part, [make_pairs(part, 128, 0.1, rng_for(7, "pairs", "train", 0, d)) for d in range(3)]


def test_every_document_is_walked_from_its_first_sentence_each_pass(pass_pairs):
    """As in the reference, each pass walks every document: its pairs start at its first sentence and move
    forward; after an IsNext pair the next one starts past B, after a NotNext one right after A."""
    part, passes = pass_pairs
    for pairs in passes:
        assert np.array_equal(np.unique(pairs.a_doc), np.arange(part.num_documents))
        first = np.r_[True, pairs.a_doc[1:] != pairs.a_doc[:-1]]
        np.testing.assert_array_equal(pairs.a_sentence[first], part.doc_offsets[:-1])
        same_doc = ~first[1:]
        step = pairs.a_sentence[1:] - pairs.a_sentence[:-1]
        assert (step[same_doc] >= 1).all()
        isnext = ~pairs.label[:-1] & same_doc
        assert (pairs.a_sentence[1:][isnext] > pairs.b_sentence[:-1][isnext]).all()


def test_isnext_b_follows_a_and_notnext_b_is_another_document(pass_pairs):
    part, passes = pass_pairs
    doc_of_sentence = np.repeat(np.arange(part.num_documents), np.diff(part.doc_offsets))
    for pairs in passes:
        assert (doc_of_sentence[pairs.a_sentence] == pairs.a_doc).all()
        assert (doc_of_sentence[pairs.b_sentence] == pairs.b_doc).all()
        isnext = ~pairs.label
        assert (pairs.b_doc[isnext] == pairs.a_doc[isnext]).all()
        assert (pairs.b_sentence[isnext] > pairs.a_sentence[isnext]).all()
        # A's untruncated end is B's first sentence start: only truncation cuts lie between them.
        gap = part.sent_offsets[pairs.b_sentence[isnext]] - pairs.a_end[isnext]
        assert (gap >= 0).all() and (gap <= pairs.truncated_tokens[isnext]).all()
        assert (pairs.b_doc[~isnext] != pairs.a_doc[~isnext]).all()


def test_lengths_fit_and_segments_are_never_empty(pass_pairs):
    _, passes = pass_pairs
    for pairs in passes:
        len_a, len_b = pairs.a_end - pairs.a_start, pairs.b_end - pairs.b_start
        assert (len_a >= 1).all() and (len_b >= 1).all()
        assert (len_a + len_b <= 125).all()
        assert ((len_a + len_b == 125) | (pairs.truncated_tokens == 0)).all()


def test_notnext_share_is_exactly_balanced():
    """The reference gives ~56% NotNext (one-sentence chunks are forced); here 50% within 0.005 on 10,000+."""
    part = synthetic_partition(4000, seed=3, max_sentences=6, max_len=60)
    total = not_next = 0
    for d in range(3):
        pairs = make_pairs(part, 128, 0.1, rng_for(1, "pairs", "train", 0, d))
        balance = np.cumsum(np.where(pairs.label, 1, -1))
        # Runs of forced NotNext (one-sentence documents, short targets) open a debt the next free choices
        # pay back: bounded on the way, and (almost) settled at the end of every file.
        assert np.abs(balance).max() <= 30 and abs(balance[-1]) <= 2
        total, not_next = total + len(pairs), not_next + int(pairs.label.sum())
    assert total >= 10_000
    assert abs(not_next / total - 0.5) <= 0.005


def test_short_seq_prob_shortens_pairs():
    part = synthetic_partition(300, seed=4, max_sentences=40)
    lengths = {}
    for p in (0.0, 1.0):
        pairs = make_pairs(part, 128, p, rng_for(0, "pairs", "train", 0, 0))
        lengths[p] = np.mean((pairs.a_end - pairs.a_start) + (pairs.b_end - pairs.b_start))
    assert lengths[0.0] > 110  # most pairs fill the 125 tokens
    assert lengths[1.0] < 0.75 * lengths[0.0]  # targets uniform in [2, 125] (plus sentence overshoot)


def test_same_rng_same_pairs_other_pass_other_pairs():
    part = synthetic_partition(200, seed=5)
    one = make_pairs(part, 128, 0.1, rng_for(9, "pairs", "train", 0, 0))
    again = make_pairs(part, 128, 0.1, rng_for(9, "pairs", "train", 0, 0))
    other = make_pairs(part, 128, 0.1, rng_for(9, "pairs", "train", 0, 1))
    assert pairs_table(part, one).equals(pairs_table(part, again))
    assert not pairs_table(part, one).equals(pairs_table(part, other))


def test_table_holds_the_token_ranges():
    part = synthetic_partition(50, seed=6)
    pairs = make_pairs(part, 64, 0.1, rng_for(0, "pairs", "train", 0, 0))
    table = pairs_table(part, pairs)
    assert table.num_rows == len(pairs)
    for i in range(0, len(pairs), 7):
        row = table.slice(i, 1).to_pylist()[0]
        assert row["tokens_a"] == part.tokens[pairs.a_start[i] : pairs.a_end[i]].tolist()
        assert row["tokens_b"] == part.tokens[pairs.b_start[i] : pairs.b_end[i]].tolist()
        assert row["doc_id"] == part.doc_ids[pairs.a_doc[i]]
        assert row["sentence_index"] == part.sent_index[pairs.a_sentence[i]]


def test_one_document_cannot_make_pairs():
    with pytest.raises(ValueError, match="two documents"):
        make_pairs(synthetic_partition(1, seed=0), 128, 0.1, rng_for(0, "pairs"))
