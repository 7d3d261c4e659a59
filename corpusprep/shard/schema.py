"""The Parquet schema of training shards; names follow Hugging Face `BertForPreTraining` arguments."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

SCHEMA_VERSION = 1
SPLITS = ("train", "validation")


def shard_schema(token_dtype: np.dtype = np.dtype(np.uint16)) -> pa.Schema:
    token = pa.from_numpy_dtype(token_dtype)
    return pa.schema(
        [
            pa.field("input_ids", pa.list_(token), nullable=False),
            pa.field("token_type_ids", pa.list_(pa.uint8()), nullable=False),
            pa.field("masked_lm_positions", pa.list_(pa.uint16()), nullable=False),
            pa.field("masked_lm_ids", pa.list_(token), nullable=False),
            pa.field("next_sentence_label", pa.uint8(), nullable=False),
            pa.field("num_tokens", pa.uint16(), nullable=False),
        ]
    )


SHARD_SCHEMA = shard_schema()
