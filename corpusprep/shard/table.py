"""Masked examples <-> Arrow tables in the shard schema, and the counts recorded in the manifest."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from corpusprep.errors import UsageError
from corpusprep.mask import Masked
from corpusprep.mask.examples import list_parts, row_mask
from corpusprep.mask.mlm import ACTIONS, KEEP, MASK, RANDOM
from corpusprep.shard.schema import shard_schema

COUNT_KEYS = (
    "examples", "is_next", "not_next", "tokens", "masked_tokens", "mask_token", "random_token", "kept_token",
)


def _array(values: np.ndarray) -> pa.Array:
    """numpy -> Arrow, zero-copy. (`pa.array` would import pandas to inspect its input: 0.3 s per process.)"""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _list(offsets: np.ndarray, values: np.ndarray) -> pa.ListArray:
    return pa.ListArray.from_arrays(_array(offsets), _array(values))


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:  # Arrow list offsets are int32
        raise UsageError(f"{offsets[-1]:,} tokens in one shard, over 2**31: lower --examples-per-shard")
    return offsets.astype(np.int32)


def to_table(masked: Masked) -> pa.Table:
    ex = masked.examples
    tokens, predictions = _offsets(ex.lengths), _offsets(masked.predicted)
    predicted = row_mask(masked.predicted, masked.positions.shape[1])
    return pa.Table.from_arrays(
        [
            _list(tokens, ex.flat_ids()),
            _list(tokens, ex.token_type_ids()),
            _list(predictions, masked.positions[predicted]),
            _list(predictions, masked.labels[predicted]),
            _array(ex.is_random_next.view(np.uint8)),
            _array(ex.lengths.astype(np.uint16)),
        ],
        schema=shard_schema(ex.ids.dtype),
    )


def actions_of(shown: np.ndarray, labels: np.ndarray, mask_id: int) -> np.ndarray:
    """What was done at each prediction, read off the output (a random draw never equals the original)."""
    return np.where(shown == mask_id, MASK, np.where(shown == labels, KEEP, RANDOM)).astype(np.int8)


def count_masked(masked: Masked) -> dict[str, int]:
    """Manifest counts of a batch of examples."""
    not_next = int(masked.examples.is_random_next.sum())
    return {
        "examples": len(masked.examples),
        "is_next": len(masked.examples) - not_next,
        "not_next": not_next,
        "tokens": int(masked.examples.lengths.sum()),
        "masked_tokens": int(masked.predicted.sum()),
        **masked.counts(),
    }


def gather_predicted(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(token shown at each predicted position, its label, the example of each prediction, flat positions)."""
    id_offsets, ids = list_parts(table.column("input_ids"))
    pred_offsets, positions = list_parts(table.column("masked_lm_positions"))
    _, labels = list_parts(table.column("masked_lm_ids"))
    example = np.repeat(np.arange(table.num_rows), np.diff(pred_offsets))
    flat = id_offsets[example] + positions.astype(np.int64)
    return ids[np.minimum(flat, max(len(ids) - 1, 0))], labels, example, flat


def count_table(table: pa.Table, mask_id: int) -> dict[str, int]:
    """Manifest counts, recomputed from the rows of a file (robust to malformed rows, for `validate`)."""
    shown, labels, _, _ = gather_predicted(table)
    label = table.column("next_sentence_label").to_numpy()
    actions = np.bincount(actions_of(shown, labels, mask_id), minlength=3)
    return {
        "examples": table.num_rows,
        "is_next": int((label == 0).sum()),
        "not_next": int((label == 1).sum()),
        "tokens": int(table.column("num_tokens").to_numpy().sum(dtype=np.int64)),
        "masked_tokens": len(labels),
        **{name: int(actions[i]) for i, name in enumerate(ACTIONS)},
    }
