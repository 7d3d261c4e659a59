"""Masked examples <-> Arrow tables in the shard schema, and the counts recorded in the manifest."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from corpusprep.mask import Masked
from corpusprep.mask.examples import list_parts
from corpusprep.shard.schema import shard_schema

COUNT_KEYS = (
    "examples", "is_next", "not_next", "tokens", "masked_tokens", "mask_token", "random_token", "kept_token",
)


def _list(offsets: np.ndarray, values: np.ndarray) -> pa.ListArray:
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values))


def to_table(masked: Masked) -> pa.Table:
    ex = masked.examples
    dtype = ex.ids.dtype
    return pa.Table.from_arrays(
        [
            _list(ex.offsets, ex.ids),
            _list(ex.offsets, ex.token_type_ids()),
            _list(masked.pred_offsets, masked.positions.astype(np.uint16)),
            _list(masked.pred_offsets, masked.labels.astype(dtype)),
            pa.array(ex.is_random_next.astype(np.uint8)),
            pa.array(ex.lengths.astype(np.uint16)),
        ],
        schema=shard_schema(dtype),
    )


def gather_predicted(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(token shown at each predicted position, its label, the example of each prediction, flat positions)."""
    id_offsets, ids = list_parts(table.column("input_ids"))
    pred_offsets, positions = list_parts(table.column("masked_lm_positions"))
    _, labels = list_parts(table.column("masked_lm_ids"))
    example = np.repeat(np.arange(table.num_rows), np.diff(pred_offsets))
    flat = id_offsets[example] + positions.astype(np.int64)
    return ids[np.minimum(flat, max(len(ids) - 1, 0))], labels, example, flat


def count_table(table: pa.Table, mask_id: int) -> dict[str, int]:
    """Manifest counts, recomputed from the rows (so `validate` can check them against the files)."""
    shown, labels, _, _ = gather_predicted(table)
    label = table.column("next_sentence_label").to_numpy()
    is_mask = shown == mask_id
    kept = ~is_mask & (shown == labels)
    return {
        "examples": table.num_rows,
        "is_next": int((label == 0).sum()),
        "not_next": int((label == 1).sum()),
        "tokens": int(table.column("num_tokens").to_numpy().sum(dtype=np.int64)),
        "masked_tokens": len(labels),
        "mask_token": int(is_mask.sum()),
        "random_token": int((~is_mask & ~kept).sum()),
        "kept_token": int(kept.sum()),
    }
