"""The Parquet schema of `build-pairs` output (documented in the README)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def pairs_schema(token_dtype: np.dtype = np.dtype(np.uint16)) -> pa.Schema:
    """Token lists use the narrowest unsigned type that holds the vocab (uint16 up to 65,536 tokens)."""
    token = pa.from_numpy_dtype(token_dtype)
    return pa.schema(
        [
            pa.field("tokens_a", pa.list_(token), nullable=False),
            pa.field("tokens_b", pa.list_(token), nullable=False),
            pa.field("is_random_next", pa.bool_(), nullable=False),
            pa.field("doc_id", pa.string(), nullable=False),
            pa.field("sentence_index", pa.uint32(), nullable=False),
            pa.field("b_doc_id", pa.string(), nullable=False),
            pa.field("b_sentence_index", pa.uint32(), nullable=False),
        ]
    )


PAIRS_SCHEMA = pairs_schema()
SPLITS = ("train", "validation")
