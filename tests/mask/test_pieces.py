"""Rows of pieces (objective none) -> `[CLS] p1 [SEP] [CLS] p2 [SEP] ...`, and the contract checked."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError
from corpusprep.mask import Masking, MaskVocab, examples_from_pieces, mask_examples, strategies
from corpusprep.pair.schema import pairs_schema
from corpusprep.tokenize import VocabInfo
from tests.mask.test_mlm import check_predictions
from tests.shard.objectives_fixture import make_piece_rows


def rows(tokens: list[list[int]], lengths: list[list[int]]) -> pa.Table:
    docs = [[f"d{j}" for j in range(len(k))] for k in lengths]
    return pa.table(
        [pa.array(tokens, pa.list_(pa.uint16())), pa.array(lengths, pa.list_(pa.uint16())),
         pa.array(docs, pa.list_(pa.string())),
         pa.array([[0] * len(k) for k in lengths], pa.list_(pa.uint32()))],
        schema=pairs_schema(objective="none"),
    )


# a vocab of 100 ids: [PAD] 0, [CLS] 1, [SEP] 2, [MASK] 3
TOY = MaskVocab(cls_id=1, sep_id=2, pad_id=0, mask_id=3, candidate=np.arange(100) > 3,
                continuation=np.zeros(100, bool), random_ids=np.arange(4, 100))
KW = dict(vocab=TOY, source="p.parquet", first_row=40)


def test_layout_of_pieces():
    ex = examples_from_pieces(rows([[10, 11, 12, 13], [20]], [[1, 3], [1]]), max_seq_length=16, **KW)
    assert ex.ids.tolist() == [[1, 10, 2, 1, 11, 12, 13, 2], [1, 20, 2, 0, 0, 0, 0, 0]]
    assert ex.packed and ex.lengths.tolist() == [8, 3]
    assert ex.token_type_ids().tolist() == [0] * 11
    offsets, columns = ex.piece_starts(cls_id=1)
    assert offsets.tolist() == [0, 2, 3] and columns.tolist() == [0, 3, 0]
    assert ex.take(np.array([1])).packed


@pytest.mark.parametrize(
    ("tokens", "lengths", "message"),
    [
        ([[10, 11], [5, 6]], [[2], [1]], r"row 41: piece_lengths do not add up"),
        ([[10, 11], [5, 6]], [[2], [0, 2]], r"row 41: an empty piece"),
        ([[10, 11], [5, 6]], [[2], []], r"row 41: no pieces"),
        ([[10, 11], [5, 2]], [[2], [2]], r"row 41: a piece holds .* \[CLS\]/\[SEP\]/\[PAD\]"),
        ([[10, 11], list(range(10, 22))], [[2], [6, 6]], r"row 41: .* longer than max_seq_length 15"),
    ],
)
def test_broken_rows_name_the_file_and_row(tokens, lengths, message):
    with pytest.raises(DataError, match=r"^p\.parquet " + message):
        examples_from_pieces(rows(tokens, lengths), max_seq_length=15, **KW)


@pytest.mark.slow  # ~5.2 s idle (all cases)
@pytest.mark.parametrize("strategy", strategies.names())
def test_masking_rows_of_pieces_never_touches_their_specials(stream, vocab_dir, strategy):
    vocab = VocabInfo.load(vocab_dir)
    mask_vocab = MaskVocab.from_vocab(vocab)
    ex = examples_from_pieces(
        make_piece_rows(stream, 20_000, seed=3), vocab=mask_vocab, max_seq_length=128, source="t",
    )
    masked = mask_examples(ex, mask_vocab, rng_for(5, strategy), masking=Masking(strategy=strategy))
    flat = check_predictions(masked, ex, mask_vocab)  # labels are candidates: never [CLS]/[SEP]
    assert np.array_equal(masked.examples.piece_starts(vocab.cls_id)[1], ex.piece_starts(vocab.cls_id)[1])
    assert abs(len(flat) / ex.lengths.sum() - 0.15) < 0.005
