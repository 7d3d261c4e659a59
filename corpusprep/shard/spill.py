"""Pass-1 spill files: masked examples grouped by destination shard, stored as their raw padded arrays.

A spill file is a sequence of groups; a group is some examples' arrays (`Masked` fields) written back to
back with `ndarray.tofile`. Its index entry `[offset, rows, width, predictions]` is all a reader needs, so
reading a group is a few `np.fromfile` calls: no list columns are encoded or decoded between the passes
(converting Arrow lists to grids and back cost as much as the whole masking step).
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

from corpusprep.engine import storage
from corpusprep.mask import Examples, Masked

FORMAT = 1  # in the run's fingerprint: an unfinished run with another spill format is never resumed
LENGTH = np.dtype(np.uint16)  # lengths, positions and counts fit: max_seq_length <= 65,535


def _layout(token: np.dtype, rows: int, width: int, k: int) -> list[tuple[np.dtype, int]]:
    """(dtype, count) of each array of a group, in file order: ids, lengths, len_a, label (the sentence label;
    0 in rows of pieces), predicted, positions, labels, actions."""
    return [
        (token, rows * width), (LENGTH, rows), (LENGTH, rows), (np.dtype(bool), rows), (LENGTH, rows),
        (LENGTH, rows * k), (token, rows * k), (np.dtype(np.int8), rows * k),
    ]


def write_group(spill: BinaryIO, masked: Masked) -> list[int]:
    """Append `masked` to an open spill file; return its index entry."""
    ex = masked.examples
    offset, width = spill.tell(), ex.ids.shape[1]
    arrays = [
        ex.ids, ex.lengths, ex.len_a, ex.label, masked.predicted,
        masked.positions, masked.labels, masked.actions,
    ]
    layout = _layout(ex.ids.dtype, len(ex), width, masked.positions.shape[1])
    for array, (dtype, _) in zip(arrays, layout, strict=True):
        # not tofile: a short write there loses its errno
        spill.write(np.ascontiguousarray(array, dtype).data)
    return [offset, len(ex), width, masked.positions.shape[1]]


def read_groups(
    groups: list[tuple[str, list[int]]], rows: np.ndarray, token: np.dtype, pad_id: int, packed: bool = False
) -> Masked:
    """Gather groups (spill path, index entry) into one Masked, the i-th example read going to row `rows[i]`
    (so a shuffle costs no extra pass: each group is copied once, straight to its final rows). `packed`:
    the examples are rows of pieces."""
    n = sum(entry[1] for _, entry in groups)
    width = max((entry[2] for _, entry in groups), default=0)
    k = max((entry[3] for _, entry in groups), default=0)
    ids = np.full((n, width), pad_id, token)
    lengths, len_a, predicted = (np.zeros(n, np.int64) for _ in range(3))
    label = np.zeros(n, bool)
    positions, labels, actions = np.zeros((n, k), LENGTH), np.zeros((n, k), token), np.zeros((n, k), np.int8)
    done = 0
    for path, (offset, count, w, kk) in groups:
        layout = [(np.dtype(dtype), size) for dtype, size in _layout(token, count, w, kk)]
        # one read of the group's bytes: on a store one ranged GET, nothing read ahead
        data = storage.read_range(path, offset, sum(dtype.itemsize * size for dtype, size in layout))
        parts, at = [], 0
        for dtype, size in layout:
            parts.append(np.frombuffer(data, dtype, size, at))
            at += dtype.itemsize * size
        to = rows[done : done + count]
        ids[to, :w] = parts[0].reshape(count, w)
        lengths[to], len_a[to], label[to], predicted[to] = parts[1:5]
        positions[to, :kk] = parts[5].reshape(count, kk)
        labels[to, :kk] = parts[6].reshape(count, kk)
        actions[to, :kk] = parts[7].reshape(count, kk)
        done += count
    return Masked(Examples(ids, lengths, len_a, label, packed), positions, labels, actions, predicted)
