"""NSP pairs -> `[CLS] A [SEP] B [SEP]` sequences, as flat numpy arrays (one row per example, CSR layout)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from corpusprep.errors import DataError


@dataclass(frozen=True)
class Examples:
    """Example i is `ids[offsets[i]:offsets[i + 1]]`; its segment B starts at `offsets[i] + len_a[i] + 2`."""

    ids: np.ndarray  # token dtype, flat
    offsets: np.ndarray  # int64[n + 1]
    len_a: np.ndarray  # int64[n]
    is_random_next: np.ndarray  # bool[n]

    def __len__(self) -> int:
        return len(self.len_a)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def example_of_token(self) -> np.ndarray:
        return np.repeat(np.arange(len(self)), self.lengths)

    def token_type_ids(self) -> np.ndarray:
        """uint8 per token: 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`."""
        example = self.example_of_token
        within = np.arange(len(self.ids)) - self.offsets[example]
        return (within >= self.len_a[example] + 2).astype(np.uint8)


def list_parts(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets from 0, values) of an Arrow list array, respecting slices."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    offsets = array.offsets.to_numpy().astype(np.int64)
    return offsets - offsets[0], array.flatten().to_numpy()


def concat_segments(a_offsets, a_values, b_offsets, b_values, cls_id: int, sep_id: int, dtype) -> Examples:
    """Lay out `[CLS] A [SEP] B [SEP]` for every pair without a Python loop."""
    len_a, len_b = np.diff(a_offsets), np.diff(b_offsets)
    lengths = len_a + len_b + 3
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    starts = offsets[:-1]
    ids = np.empty(offsets[-1], dtype)
    ids[starts] = cls_id
    ids[starts + 1 + len_a] = sep_id
    ids[offsets[1:] - 1] = sep_id
    # Each segment token moves by a per-example shift: its example's start plus the preceding specials.
    ids[np.arange(len(a_values)) + np.repeat(starts + 1 - a_offsets[:-1], len_a)] = a_values
    ids[np.arange(len(b_values)) + np.repeat(starts + 2 + len_a - b_offsets[:-1], len_b)] = b_values
    return Examples(ids, offsets, len_a, np.zeros(len(lengths), bool))


def examples_from_pairs(
    table: pa.Table,
    *,
    cls_id: int,
    sep_id: int,
    forbidden: np.ndarray,
    max_seq_length: int,
    dtype: np.dtype,
    source: str,
    first_row: int = 0,
) -> Examples:
    """Build examples from a pairs table (`corpusprep.pair.schema`), checking the pairs contract.

    `forbidden` is bool[vocab size]: ids that may not appear inside a segment ([CLS], [SEP], [PAD]);
    `dtype` is the vocab's token dtype (pairs may use a wider one).
    A pair that breaks the contract raises DataError naming `source` and the row.
    """
    a_offsets, a_values = list_parts(table.column("tokens_a"))
    b_offsets, b_values = list_parts(table.column("tokens_b"))
    len_a, len_b = np.diff(a_offsets), np.diff(b_offsets)

    def fail(rows: np.ndarray, what: str) -> None:
        if len(rows):
            row = first_row + int(rows[0])
            raise DataError(f"{source} row {row}: {what} ({len(rows)} such rows in this batch)")

    fail(np.flatnonzero((len_a == 0) | (len_b == 0)), "empty segment A or B")
    too_long = np.flatnonzero(len_a + len_b + 3 > max_seq_length)
    fail(too_long, f"[CLS] A [SEP] B [SEP] longer than max_seq_length {max_seq_length}")
    for offsets, values, name in ((a_offsets, a_values, "A"), (b_offsets, b_values, "B")):
        bad = values >= len(forbidden)
        bad[~bad] = forbidden[values[~bad]]
        if bad.any():
            row = np.searchsorted(offsets, np.flatnonzero(bad), side="right") - 1
            fail(row, f"segment {name} holds an id outside the vocab or a [CLS]/[SEP]/[PAD] id")
    examples = concat_segments(a_offsets, a_values, b_offsets, b_values, cls_id, sep_id, dtype)
    random_next = table.column("is_random_next").to_numpy(zero_copy_only=False).astype(bool)
    return Examples(examples.ids, examples.offsets, examples.len_a, random_next)
