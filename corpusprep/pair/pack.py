"""Rows of the `none` objective (RoBERTa FULL-SENTENCES, masked LM only) from one partition's documents.

A row holds *pieces*: whole consecutive sentences of one document, each laid out in the shards as
`[CLS] piece [SEP]`, so a row costs sum(len(piece) + 2) <= max_seq_length. Sentences are cut to
max_seq_length - 2 tokens when tokenized, so every sentence fits a row of its own.

- Unpacked (RoBERTa DOC-SENTENCES): one piece a row; a document's sentences fill a row until the next one
  does not fit. Pass 0 is exactly that; later passes end each document's first row at a random sentence
  boundary, so the passes differ.
- Packed: rows hold pieces of several documents. Documents come in a seeded random order (a different one
  each pass), sentences in text order. A sentence extends its document's current piece while the piece's row
  has room; otherwise it starts a new piece in the open row with the least room that still fits it (best
  fit), or in a new row. At most POOL rows are open; beyond that the fullest is closed.

Every sentence of every document is in exactly one piece per pass, and a piece is one contiguous token range.
short_seq_prob does not apply (rows are as full as whole sentences allow). No other document is needed: a
one-document corpus gives rows.

The pool's size, measured on 10 MB of Wikipedia (Google's vocab, partitions of 2,048 documents): rows are
filled to 0.941 / 0.959 / 0.969 / 0.974 with 4 / 8 / 16 / 32 open rows at length 128, 0.985 / 0.990 / 0.992 /
0.994 at 512, in well under a second per pass either way. bench/packing.py compares the objectives.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from corpusprep.engine import arrow
from corpusprep.pair.instances import PartitionTokens, compact, gather
from corpusprep.pair.schema import pairs_schema

POOL = 16  # open rows while packing: more fills rows a little better and costs time per new piece


@dataclass(frozen=True)
class Rows:
    """Pieces `row_offsets[r]:row_offsets[r+1]` make row r; piece p is the partition's tokens
    `[start[p], start[p] + length[p])`, from document `doc[p]`, from its sentence `sentence[p]`."""

    start: np.ndarray
    length: np.ndarray
    doc: np.ndarray
    sentence: np.ndarray
    row_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.row_offsets) - 1


def make_rows(
    part: PartitionTokens, max_seq_length: int, pack: bool, rng: np.random.Generator, dupe_pass: int
) -> Rows:
    """One dupe pass over the partition: packed or unpacked rows (module docstring)."""
    if pack:
        start, length, doc, sentence, row_of = _pack(part, max_seq_length, rng)
    else:
        start, length, doc, sentence, row_of = _unpacked(part, max_seq_length, rng, dupe_pass > 0)
    order = np.argsort(np.asarray(row_of, dtype=np.int64), kind="stable")  # pieces grouped by row, in order
    counts = np.bincount(np.asarray(row_of, dtype=np.int64))
    row_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=row_offsets[1:])
    take = [np.asarray(x, dtype=np.int64)[order] for x in (start, length, doc, sentence)]
    return Rows(*take, row_offsets)


def _unpacked(
    part: PartitionTokens, max_seq_length: int, rng: np.random.Generator, vary: bool
) -> tuple[array, ...]:
    off, doc_off = compact(part.sent_offsets), compact(part.doc_offsets)
    budget = max_seq_length - 2
    u = rng.random(part.num_documents).tolist()
    start, length, doc, sentence, row_of = (array("q") for _ in range(5))  # compact: a piece a sentence
    for document in range(part.num_documents):
        first, last = doc_off[document], doc_off[document + 1]
        first_row = True
        while first < last:  # a row of sentences [first, end)
            end = first + 1
            while end < last and off[end + 1] - off[first] <= budget:
                end += 1
            if first_row and vary and end - first > 1:
                end = first + 1 + int(u[document] * (end - first))  # 1..n sentences, uniform
            first_row = False
            start.append(off[first])
            length.append(off[end] - off[first])
            doc.append(document)
            sentence.append(first)
            row_of.append(len(row_of))
            first = end
    return start, length, doc, sentence, row_of


def _pack(part: PartitionTokens, max_seq_length: int, rng: np.random.Generator) -> tuple[array, ...]:
    off, doc_off = compact(part.sent_offsets), compact(part.doc_offsets)
    cap = max_seq_length
    used: list[int] = []  # per row: tokens incl. specials
    is_open: list[bool] = []
    pool: list[int] = []  # open rows
    start, length, doc, sentence, row_of = (array("q") for _ in range(5))  # compact: a piece a sentence
    for document in rng.permutation(part.num_documents).tolist():
        row = -1  # the row of the document's current piece
        for sent in range(doc_off[document], doc_off[document + 1]):
            n = off[sent + 1] - off[sent]
            if row >= 0 and is_open[row] and used[row] + n <= cap:
                length[-1] += n  # the piece is this document's last one, so its last in `length`
                used[row] += n
                continue
            need, row, room = n + 2, -1, cap + 1
            for r in pool:
                free = cap - used[r]
                if need <= free < room:
                    row, room = r, free
            if row < 0:
                row = len(used)
                used.append(0)
                is_open.append(True)
                pool.append(row)
            used[row] += need
            start.append(off[sent])
            length.append(n)
            doc.append(document)
            sentence.append(sent)
            row_of.append(row)
            if len(pool) > POOL:
                fullest = max(pool, key=used.__getitem__)
                pool.remove(fullest)
                is_open[fullest] = False
    return start, length, doc, sentence, row_of


def rows_table(part: PartitionTokens, rows: Rows) -> pa.Table:
    """The rows in the `none` Parquet schema: tokens back to back, each piece's length, document and first
    sentence."""
    offsets = arrow.from_numpy(rows.row_offsets.astype(np.int32))
    tokens = gather(part.tokens, rows.start, rows.start + rows.length).flatten()
    per_row = np.concatenate([[0], np.cumsum(rows.length)])[rows.row_offsets].astype(np.int32)
    doc_ids = arrow.strings(part.doc_ids).take(arrow.from_numpy(rows.doc))
    return pa.Table.from_arrays(
        [
            pa.ListArray.from_arrays(arrow.from_numpy(per_row), tokens),
            pa.ListArray.from_arrays(offsets, arrow.from_numpy(rows.length.astype(np.uint16))),
            pa.ListArray.from_arrays(offsets, doc_ids),
            pa.ListArray.from_arrays(offsets, arrow.from_numpy(part.sent_index[rows.sentence], pa.uint32())),
        ],
        schema=pairs_schema(part.tokens.dtype, "none"),
    )
