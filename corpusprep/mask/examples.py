"""Pairs -> `[CLS] A [SEP] B [SEP]` examples, or rows of pieces -> `[CLS] p1 [SEP] [CLS] p2 [SEP] ...`, as a
padded token grid (one row per example).

Why a grid: a list column's flat values are its grid's inside cells in row-major order, so values go into the
grid with one boolean-mask assignment (`pad_rows`) and come out with one boolean-mask selection
(`unpad_rows`). On the grid, laying out, masking and shuffling examples are whole-array operations (a
shuffle is a row gather) with no per-token index arrays. Rows are at least as wide as the longest example.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from corpusprep.engine.arrow import to_numpy
from corpusprep.errors import DataError, plural

if TYPE_CHECKING:  # mlm imports this module
    from corpusprep.mask.mlm import MaskVocab


def row_mask(lengths: np.ndarray, width: int) -> np.ndarray:
    """bool[n, width]: the cells of each row that hold a value."""
    return np.arange(width) < np.asarray(lengths)[:, None]


def pad_rows(values: np.ndarray, lengths: np.ndarray, width: int | None = None, fill: int = 0) -> np.ndarray:
    """Flat values of rows with these lengths -> [n, width] grid, `fill` past each row's end."""
    width = int(lengths.max(initial=0)) if width is None else width
    grid = np.full((len(lengths), width), fill, values.dtype)
    grid[row_mask(lengths, width)] = values
    return grid


def unpad_rows(grid: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The inverse of pad_rows: the rows' values, flat."""
    return grid[row_mask(lengths, grid.shape[1])]


def list_parts(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets from 0, values) of a null-free Arrow list array, respecting slices."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count:
        raise ValueError("null lists")
    offsets = to_numpy(array.offsets).astype(np.int64)  # `offsets` is already sliced, `values` is not
    values = to_numpy(array.values.slice(offsets[0], offsets[-1] - offsets[0]))
    return offsets - offsets[0], values


@dataclass(frozen=True)
class Examples:
    """Example i is `ids[i, :lengths[i]]`. A pair (nsp, sop): its segment B starts at column `len_a[i] + 2`,
    `label` is the sentence label. A row of pieces (`packed`, objective none): each piece is `[CLS] piece
    [SEP]`, so a piece starts at each [CLS] ([CLS] is never masked nor drawn as a replacement); `len_a` and
    `label` are 0."""

    ids: np.ndarray  # token dtype [n, width]; [PAD] past each example's end
    lengths: np.ndarray  # int64[n]
    len_a: np.ndarray  # int64[n]
    label: np.ndarray  # bool[n]: is_random_next (nsp), is_swapped (sop)
    packed: bool = False

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def offsets(self) -> np.ndarray:
        """int64[n + 1]: where each example starts in the flat layout."""
        offsets = np.zeros(len(self) + 1, np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        return offsets

    def flat_ids(self) -> np.ndarray:
        return unpad_rows(self.ids, self.lengths)

    def token_type_ids(self) -> np.ndarray:
        """uint8, flat: 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`; one run of each per example, so a repeat.
        All 0 in rows of pieces."""
        if self.packed:
            return np.zeros(int(self.lengths.sum()), np.uint8)
        runs = np.stack([self.len_a + 2, self.lengths - self.len_a - 2], axis=1).ravel()
        return np.repeat(np.tile(np.array([0, 1], np.uint8), len(self)), runs)

    def piece_starts(self, cls_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, columns): the columns of the [CLS] of each piece, row by row (`document_starts`)."""
        row, column = np.nonzero(self.ids == cls_id)  # row-major: ascending columns in each row
        offsets = np.zeros(len(self) + 1, np.int64)
        np.cumsum(np.bincount(row, minlength=len(self)), out=offsets[1:])
        return offsets, column

    def take(self, rows: np.ndarray | slice) -> Examples:
        return Examples(self.ids[rows], self.lengths[rows], self.len_a[rows], self.label[rows], self.packed)


def concat_segments(
    len_a: np.ndarray, a_values: np.ndarray, len_b: np.ndarray, b_values: np.ndarray,
    *, cls_id: int, sep_id: int, pad_id: int, dtype: np.dtype,
) -> Examples:
    """Lay out `[CLS] A [SEP] B [SEP]` for every pair: each segment lands in its cells with one masked
    assignment (see the module docstring)."""
    len_a, len_b = np.asarray(len_a, np.int64), np.asarray(len_b, np.int64)
    lengths = len_a + len_b + 3
    width = int(lengths.max(initial=0))
    column, rows = np.arange(width), np.arange(len(lengths))
    ids = np.full((len(lengths), width), pad_id, dtype)
    ids[(column >= 1) & (column <= len_a[:, None])] = a_values
    ids[(column >= len_a[:, None] + 2) & (column < lengths[:, None] - 1)] = b_values
    ids[rows, 0] = cls_id
    ids[rows, len_a + 1] = sep_id
    ids[rows, lengths - 1] = sep_id
    return Examples(ids, lengths, len_a, np.zeros(len(lengths), bool))


def _outside(values: np.ndarray, forbidden: np.ndarray) -> np.ndarray:
    """bool per value: outside the vocab or forbidden; one lookup, the table grown when ids exceed it."""
    top = int(values.max(initial=0))
    if top >= len(forbidden):
        forbidden = np.concatenate([forbidden, np.ones(top + 1 - len(forbidden), bool)])
    return forbidden[values]


def _failing(source: str, first_row: int):
    def fail(rows: np.ndarray, what: str) -> None:
        if len(rows):
            row = first_row + int(rows[0])
            raise DataError(f"{source} row {row}: {what} ({plural(len(rows), 'such row')} in this batch)")

    return fail


def examples_from_pairs(
    table: pa.Table | pa.RecordBatch,
    *,
    vocab: MaskVocab,
    max_seq_length: int,
    source: str,
    first_row: int = 0,
    label: str = "is_random_next",
) -> Examples:
    """Build examples from pairs (`corpusprep.pair.schema`), checking the pairs contract.

    From `vocab`: the special ids, the ids that may not appear inside a segment ([CLS], [SEP], [PAD]) and
    the token dtype (pairs may use a wider one); `label` is the pairs' label column (`Objective.pairs_label`).
    A pair that breaks the contract raises DataError naming `source` and the row (`first_row`: the table's
    first).
    """
    fail = _failing(source, first_row)
    try:
        a_offsets, a_values = list_parts(table.column("tokens_a"))
        b_offsets, b_values = list_parts(table.column("tokens_b"))
        random_next = to_numpy(table.column(label))
    except ValueError:
        raise DataError(f"{source}: null values in the batch of rows from {first_row}") from None
    len_a, len_b = np.diff(a_offsets), np.diff(b_offsets)
    fail(np.flatnonzero((len_a == 0) | (len_b == 0)), "empty segment A or B")
    too_long = np.flatnonzero(len_a + len_b + 3 > max_seq_length)
    fail(too_long, f"[CLS] A [SEP] B [SEP] longer than max_seq_length {max_seq_length}")
    for offsets, values, name in ((a_offsets, a_values, "A"), (b_offsets, b_values, "B")):
        bad = _outside(values, vocab.forbidden_in_segment)
        if bad.any():
            row = np.searchsorted(offsets, np.flatnonzero(bad), side="right") - 1
            fail(row, f"segment {name} holds an id outside the vocab or a [CLS]/[SEP]/[PAD] id")
    examples = concat_segments(len_a, a_values, len_b, b_values, cls_id=vocab.cls_id, sep_id=vocab.sep_id,
                               pad_id=vocab.pad_id, dtype=vocab.token_dtype)
    return Examples(examples.ids, examples.lengths, examples.len_a, random_next)


def examples_from_pieces(
    table: pa.Table | pa.RecordBatch,
    *,
    vocab: MaskVocab,
    max_seq_length: int,
    source: str,
    first_row: int = 0,
) -> Examples:
    """Build rows `[CLS] p1 [SEP] [CLS] p2 [SEP] ...` from rows of pieces (objective none: `tokens` back to
    back, `piece_lengths`), checking the contract like `examples_from_pairs`."""
    fail = _failing(source, first_row)
    try:
        offsets, tokens = list_parts(table.column("tokens"))
        piece_offsets, piece_lengths = list_parts(table.column("piece_lengths"))
    except ValueError:
        raise DataError(f"{source}: null values in the batch of rows from {first_row}") from None
    n_tokens, n_pieces = np.diff(offsets), np.diff(piece_offsets)
    piece_lengths = piece_lengths.astype(np.int64)
    fail(np.flatnonzero(n_pieces == 0), "no pieces")
    row_of_piece = np.repeat(np.arange(len(n_pieces)), n_pieces)
    fail(np.unique(row_of_piece[piece_lengths == 0]), "an empty piece")
    summed = np.bincount(row_of_piece, weights=piece_lengths, minlength=len(n_pieces)).astype(np.int64)
    fail(np.flatnonzero(summed != n_tokens), "piece_lengths do not add up to len(tokens)")
    lengths = n_tokens + 2 * n_pieces
    fail(np.flatnonzero(lengths > max_seq_length),
         f"pieces with their [CLS] and [SEP] longer than max_seq_length {max_seq_length}")
    bad = _outside(tokens, vocab.forbidden_in_segment)
    if bad.any():
        fail(np.searchsorted(offsets, np.flatnonzero(bad), side="right") - 1,
             "a piece holds an id outside the vocab or a [CLS]/[SEP]/[PAD] id")
    # Flat layout: piece j (0-based over the batch) has 2j specials before it plus its own [CLS].
    piece = np.repeat(np.arange(len(piece_lengths)), piece_lengths)
    first = np.zeros(len(piece_lengths), np.int64)  # each piece's first token in `tokens`
    np.cumsum(piece_lengths[:-1], out=first[1:])
    flat = np.full(int(lengths.sum()), vocab.pad_id, vocab.token_dtype)
    flat[np.arange(len(tokens)) + 2 * piece + 1] = tokens
    flat[first + 2 * np.arange(len(first))] = vocab.cls_id
    flat[first + piece_lengths + 2 * np.arange(len(first)) + 1] = vocab.sep_id
    zeros = np.zeros(len(lengths), np.int64)
    grid = pad_rows(flat, lengths, fill=vocab.pad_id)
    return Examples(grid, lengths, zeros, zeros.astype(bool), packed=True)
