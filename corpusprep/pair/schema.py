"""The Parquet schema of `build-pairs` output (documented in docs/manual/pairs.md)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from corpusprep.objectives import DEFAULT
from corpusprep.objectives import objective as objective_spec


def pairs_schema(token_dtype: np.dtype = np.dtype(np.uint16), objective: str = DEFAULT) -> pa.Schema:
    """Token lists use the narrowest unsigned type that holds the vocab (uint16 up to 65,536 tokens).

    nsp and sop: one sentence pair a row, its label named by the objective (`is_random_next`, `is_swapped`).
    none: one row of pieces; `tokens` holds them back to back without special tokens, `piece_lengths` their
    lengths (each >= 1), and each piece's document and first sentence.
    """
    token = pa.from_numpy_dtype(token_dtype)
    spec = objective_spec(objective)
    if spec.packs:
        return pa.schema(
            [
                pa.field("tokens", pa.list_(token), nullable=False),
                pa.field("piece_lengths", pa.list_(pa.uint16()), nullable=False),
                pa.field("piece_doc_ids", pa.list_(pa.string()), nullable=False),
                pa.field("piece_sentence_index", pa.list_(pa.uint32()), nullable=False),
            ]
        )
    return pa.schema(
        [
            pa.field("tokens_a", pa.list_(token), nullable=False),
            pa.field("tokens_b", pa.list_(token), nullable=False),
            pa.field(spec.pairs_label, pa.bool_(), nullable=False),
            pa.field("doc_id", pa.string(), nullable=False),
            pa.field("sentence_index", pa.uint32(), nullable=False),
            pa.field("b_doc_id", pa.string(), nullable=False),
            pa.field("b_sentence_index", pa.uint32(), nullable=False),
        ]
    )


SPLITS = ("train", "validation")
