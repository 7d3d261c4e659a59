"""The Parquet schema of training shards; names follow Hugging Face `BertForPreTraining` arguments."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from corpusprep.objectives import DEFAULT
from corpusprep.objectives import objective as objective_spec

SCHEMA_VERSION = 1
SPLITS = ("train", "validation")


def shard_schema(token_dtype: np.dtype = np.dtype(np.uint16), objective: str = DEFAULT) -> pa.Schema:
    """The columns of every objective, then its own: the sentence label (`next_sentence_label`,
    `sentence_order_label`), or for `none` the column where each piece (`[CLS] piece [SEP]`) starts."""
    token = pa.from_numpy_dtype(token_dtype)
    spec = objective_spec(objective)
    own = (
        pa.field("document_starts", pa.list_(pa.uint16()), nullable=False)
        if spec.packs
        else pa.field(spec.shard_label, pa.uint8(), nullable=False)
    )
    return pa.schema(
        [
            pa.field("input_ids", pa.list_(token), nullable=False),
            pa.field("token_type_ids", pa.list_(pa.uint8()), nullable=False),
            pa.field("masked_lm_positions", pa.list_(pa.uint16()), nullable=False),
            pa.field("masked_lm_ids", pa.list_(token), nullable=False),
            own,
            pa.field("num_tokens", pa.uint16(), nullable=False),
        ]
    )


SHARD_SCHEMA = shard_schema()
