"""Short targets by segment: the share of short-target rows follows short_seq_prob whatever the document
lengths; by document (Google's draw, kept for reproduction) one coin decides every row of a long book."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from corpusprep.cli import app
from corpusprep.engine.rng import rng_for
from corpusprep.errors import UsageError
from corpusprep.pair.build import PairOptions
from corpusprep.pair.instances import PartitionTokens, make_pairs, make_sop_pairs
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.pair.test_instances import synthetic_partition

SEEDS = range(24)
P = 0.1


def books(n_books: int = 4, sentences: int = 3000, seed: int = 0) -> PartitionTokens:
    """A few book-length documents (sentences of 5-40 tokens, as in prose), the case of a corpus of novels."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 41, n_books * sentences)
    sent_offsets = np.concatenate([[0], np.cumsum(lengths)])
    return PartitionTokens(
        tokens=rng.integers(5, 1000, sent_offsets[-1]).astype(np.uint16),
        sent_offsets=sent_offsets,
        sent_index=np.tile(np.arange(sentences, dtype=np.uint32), n_books),
        doc_offsets=np.arange(n_books + 1) * sentences,
        doc_ids=[f"book:{d}" for d in range(n_books)],
    )


def short_shares(make, part: PartitionTokens, by: str) -> np.ndarray:
    shares = []
    for seed in SEEDS:
        pairs = make(part, 128, P, rng_for(seed, "pairs", "train", 0, 0), by)
        pairs = pairs[0] if isinstance(pairs, tuple) else pairs
        shares.append(pairs.short_target.mean())
    return np.array(shares)


@pytest.mark.parametrize("make", [make_pairs, make_sop_pairs], ids=["nsp", "sop"])
def test_share_of_short_rows_follows_short_seq_prob_by_segment_not_by_document(make):
    part = books()  # ~4 x 700 rows a pass
    by_segment = short_shares(make, part, "segment")
    by_document = short_shares(make, part, "document")
    # by segment every row is its own draw: ~2,800 rows, a standard error of ~0.006 around P (a short
    # target is below the maximum with probability (max - 2) / (max - 1) of P)
    assert np.abs(by_segment - P).max() < 0.025, by_segment
    assert abs(by_segment.mean() - P) < 0.006
    # by document four coins decide all of it: shares of 0 most of the time, a quarter or more at times
    assert by_document.std() > 8 * by_segment.std(), (by_document, by_segment)
    assert (by_document == 0).sum() >= 5 and by_document.max() > 0.2


def test_segment_draws_keep_the_pairing_rules():
    """Same rules as before, only the targets move: exact balance, lengths in bounds, B never empty."""
    part = synthetic_partition(2000, seed=3, max_sentences=8, max_len=60)
    pairs = make_pairs(part, 128, P, rng_for(1, "pairs", "train", 0, 0), "segment")
    assert abs(int(pairs.label.sum()) * 2 - len(pairs)) <= 2
    len_a, len_b = pairs.a_end - pairs.a_start, pairs.b_end - pairs.b_start
    assert (len_a >= 1).all() and (len_b >= 1).all() and (len_a + len_b <= 125).all()
    assert abs(pairs.short_target.mean() - P) < 0.02


def test_document_draws_are_the_reference_order_of_draws():
    """`document` draws exactly what the per-document rule drew before: a short target rules the whole
    document (every row of a document shares it), as in Google's create_instances_from_document."""
    part = synthetic_partition(300, seed=4, max_sentences=30)
    pairs = make_pairs(part, 128, 0.5, rng_for(0, "pairs", "train", 0, 0), "document")
    for d in np.unique(pairs.a_doc):
        assert len(set(pairs.short_target[pairs.a_doc == d].tolist())) == 1


@pytest.mark.parametrize(
    ("make", "digest"),
    [(make_pairs, "206da5d9c2118fc2"), (make_sop_pairs, "021ffd390d69db2e")],
    ids=["nsp", "sop"],
)
def test_document_draws_give_the_bytes_of_the_per_document_rule(make, digest):
    """Pinned: the pairs the per-document rule made before `short_seq_by` existed (same partition, rng and
    options), so `--short-seq-by document` reproduces earlier outputs exactly."""
    pairs = make(synthetic_partition(500, seed=2), 128, 0.3, rng_for(1, "pairs"), "document")
    pairs = pairs[0] if isinstance(pairs, tuple) else pairs
    arrays = (pairs.a_start, pairs.a_end, pairs.b_start, pairs.b_end, pairs.label)
    found = hashlib.sha256(b"".join(np.asarray(x, dtype=np.int64).tobytes() for x in arrays)).hexdigest()
    assert found[:16] == digest


def test_option_is_checked_and_does_not_apply_to_rows_of_pieces():
    with pytest.raises(UsageError, match="short_seq_by must be segment or document"):
        PairOptions(short_seq_by="chunk")
    assert PairOptions(objective="none", short_seq_by="document") == PairOptions(objective="none")
    assert PairOptions(short_seq_by="document") != PairOptions()


def test_build_pairs_takes_the_option_and_counts_short_rows(tmp_path):
    """`build-pairs --short-seq-by`: recorded in the options, short-target rows counted in stats.json; on
    two long documents the per-document draw gives a share far from short_seq_prob, per segment near it."""
    vocab = make_vocab(tmp_path / "vocab")
    corpus = write_bert(tmp_path / "books.txt", synthetic_documents(2, seed=1, sentences=(2500, 2500)))
    shares = {}
    for by in ("segment", "document"):
        out = tmp_path / by
        args = ["build-pairs", str(corpus), "--vocab", str(vocab), "-o", str(out), "--short-seq-prob", "0.3",
                "--validation-fraction", "0", "--dupe-factor", "1", "--no-progress",
                "--short-seq-by", by]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        stats = json.loads((out / "stats.json").read_text())
        assert stats["options"]["short_seq_by"] == by
        train = stats["splits"]["train"]
        shares[by] = train["short_target_pairs"] / train["pairs"]
    assert abs(shares["segment"] - 0.3) < 0.05
    assert shares["document"] in (0.0, 1.0) or abs(shares["document"] - 0.3) > 0.1  # two coins: one each
