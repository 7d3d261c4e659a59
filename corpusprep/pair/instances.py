"""Sentence pairs from one partition's tokenized documents: NSP (BERT's `create_instances_from_document`, with
the IsNext/NotNext split kept exactly balanced) and SOP (ALBERT: the same chunks, swapped in exactly half).

Everything is index arithmetic over a flat token array: a segment is a run of whole sentences of one document,
so it is one contiguous token range, and truncation only moves its two ends. Tokens are gathered once, at the
end, with numpy.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from corpusprep.engine import arrow
from corpusprep.objectives import DEFAULT
from corpusprep.pair.options import SHORT_SEQ_BY  # when short_seq_prob is drawn: each chunk, or per document
from corpusprep.pair.schema import pairs_schema

GATHER_ROWS = 65_536  # rows whose tokens `gather` indexes at once


@dataclass(frozen=True)
class PartitionTokens:
    """Tokenized documents, flat. Document d holds sentences `doc_offsets[d]:doc_offsets[d+1]`; sentence s
    holds `tokens[sent_offsets[s]:sent_offsets[s+1]]` (never empty) and was sentence `sent_index[s]` of its
    document."""

    tokens: np.ndarray  # uint16 / uint32
    sent_offsets: np.ndarray  # int64[n_sentences + 1]
    sent_index: np.ndarray  # uint32[n_sentences]
    doc_offsets: np.ndarray  # int64[n_documents + 1]
    doc_ids: list[str]

    @property
    def num_documents(self) -> int:
        return len(self.doc_offsets) - 1


@dataclass(frozen=True)
class Pairs:
    """One row per pair: token ranges `[a_start, a_end)`, `[b_start, b_end)` into the partition's tokens."""

    a_start: np.ndarray
    a_end: np.ndarray
    b_start: np.ndarray
    b_end: np.ndarray
    a_sentence: np.ndarray  # first sentence of A (partition-wide index)
    b_sentence: np.ndarray
    a_doc: np.ndarray
    b_doc: np.ndarray
    label: np.ndarray  # bool: NotNext (nsp) or swapped (sop)
    truncated_tokens: np.ndarray  # tokens cut by truncate_seq_pair
    short_target: np.ndarray  # bool: the row's chunk had a target below the maximum (short_seq_prob)

    def __len__(self) -> int:
        return len(self.a_start)




def make_pairs(
    part: PartitionTokens,
    max_seq_length: int,
    short_seq_prob: float,
    rng: np.random.Generator,
    short_seq_by: str = "segment",
) -> Pairs:
    """One dupe pass over the partition, document by document, as the reference does.

    Differences from the reference, on purpose:
    - Balance: a chunk of one sentence must be NotNext (there is no B in it). The reference therefore ends at
      ~56% NotNext. Here a running balance (NotNext - IsNext) decides every free choice: above zero, IsNext;
      below, NotNext; at zero, a fair coin. While IsNext pairs are owed, a one-sentence chunk that is not
      its document's last also takes the next sentence, so it can be IsNext. Only one-sentence documents and
      a document's lone last sentence still force NotNext, and the following free choices pay that back.
    - The random document is drawn uniformly among the *other* documents (the reference retries 10 times and
      may keep the current one).
    - Truncation removes the same number of tokens from the same segment as the reference; the number taken
      from the front is drawn at once (Binomial(n, 1/2)) instead of token by token: same distribution.
    - Short targets (`short_seq_by="segment"`, the default): each chunk draws its own target length, so the
      share of rows with a short target is short_seq_prob whatever the document lengths. The reference draws
      once per document ("document"), so one coin decides every row of a long book.
    """
    if part.num_documents < 2:
        raise ValueError("a partition needs at least two documents to draw NotNext segments from")
    max_tokens = max_seq_length - 3
    by_segment = check_short_seq_by(short_seq_by)
    # Draws are taken from one block of uniforms: at most 2 per document (by document) and 4 per chunk (6
    # by segment), and every chunk consumes at least one sentence. Scalar Generator calls would cost more
    # than the rest of the loop. (The block's size is part of the output: the truncation draws follow it.)
    n_sentences = len(part.sent_offsets) - 1
    u = uniforms(rng, 2 * part.num_documents + (6 if by_segment else 4) * n_sentences + 1)
    rows = _nsp_rows(part, u, max_tokens, short_seq_prob, by_segment)
    a_start, a_end, b_start, b_end, truncated = _truncated(part, rows, max_tokens, rng)
    return Pairs(
        a_start=a_start,
        a_end=a_end,
        b_start=b_start,
        b_end=b_end,
        a_sentence=np.asarray(rows.a_first, dtype=np.int64),
        b_sentence=np.asarray(rows.b_first, dtype=np.int64),
        a_doc=np.asarray(rows.a_doc, dtype=np.int64),
        b_doc=np.asarray(rows.b_doc, dtype=np.int64),
        label=np.asarray(rows.label, dtype=bool),
        truncated_tokens=truncated,
        short_target=np.asarray(rows.short, dtype=bool),
    )


def uniforms(rng: np.random.Generator, count: int) -> array:
    """`rng.random(count)` for the chunk loops to read by index: Python floats as a list reads them, in 8
    bytes each where a list holds 32 (a partition of 200 MB of text draws ~10^7)."""
    values = array("d")
    values.frombytes(memoryview(rng.random(count)).cast("B"))
    return values


def compact(values: np.ndarray) -> array:
    """Integers (offsets) to read one at a time and `bisect`: as a list would, in 8 bytes each, not 36."""
    out = array("q")
    out.frombytes(memoryview(np.ascontiguousarray(values, dtype=np.int64)).cast("B"))
    return out


def _ints() -> array:
    return array("q")


def _flags() -> array:
    return array("b")


@dataclass
class _Rows:
    """The rows of one pass as the chunk loops find them: A = sentences [a_first, a_stop) of document a_doc,
    B = [b_first, b_stop) of b_doc (partition-wide sentence indices), the label and whether the target was
    short. Compact arrays: a pass over a large partition has ~10^6 rows."""

    a_first: array = field(default_factory=_ints)
    a_stop: array = field(default_factory=_ints)
    b_first: array = field(default_factory=_ints)
    b_stop: array = field(default_factory=_ints)
    a_doc: array = field(default_factory=_ints)
    b_doc: array = field(default_factory=_ints)
    label: array = field(default_factory=_flags)
    short: array = field(default_factory=_flags)

    def add(self, a_first: int, a_stop: int, a_doc: int, b_first: int, b_stop: int, b_doc: int, label: bool,
            short: bool) -> None:
        self.a_first.append(a_first)
        self.a_stop.append(a_stop)
        self.a_doc.append(a_doc)
        self.b_first.append(b_first)
        self.b_stop.append(b_stop)
        self.b_doc.append(b_doc)
        self.label.append(label)
        self.short.append(short)


def _nsp_rows(part: PartitionTokens, u: Sequence[float], max_tokens: int, short_seq_prob: float,
              by_segment: bool) -> _Rows:
    """`make_pairs`' chunks and their B segments, reading the uniforms `u` in order."""
    off, doc_off = compact(part.sent_offsets), compact(part.doc_offsets)
    rows, k, balance = _Rows(), 0, 0
    for doc in range(part.num_documents):
        first, last = doc_off[doc], doc_off[doc + 1]
        if not by_segment:
            target, k = draw_target(u, k, max_tokens, short_seq_prob)
        while first < last:
            if by_segment:
                target, k = draw_target(u, k, max_tokens, short_seq_prob)
            # The chunk is sentences [first, end): up to the one that reaches the target, or the document end.
            end = min(bisect_left(off, off[first] + target, first + 1, last + 1), last)
            if end - first == 1 and balance > 0 and end < last:
                end += 1  # owed IsNext pairs: give the chunk a B (truncation keeps the pair in bounds)
            split = first + 1  # A = [first, split), split - first uniform in [1, n - 1] for n sentences
            if end - first >= 2:
                split += int(u[k] * (end - first - 1))
                k += 1
                random_next, k = _balanced_choice(u, k, balance)
            else:
                random_next = True
            if random_next:
                target_b = target - (off[split] - off[first])
                b_first, b_stop, b_doc, k = _random_segment(off, doc_off, doc, target_b, u, k)
                rows.add(first, split, doc, b_first, b_stop, b_doc, True, target < max_tokens)
                balance, first = balance + 1, split  # the chunk's unused sentences go back
            else:
                rows.add(first, split, doc, split, end, doc, False, target < max_tokens)
                balance, first = balance - 1, end
    return rows


def _balanced_choice(u: Sequence[float], k: int, balance: int) -> tuple[bool, int]:
    """A label kept balanced: the running balance (labelled - unlabelled) decides, a coin from `u[k]` at zero;
    and where the next draw is."""
    if balance:
        return balance < 0, k
    return u[k] < 0.5, k + 1


def _random_segment(off: Sequence[int], doc_off: Sequence[int], d: int, target: int, u: Sequence[float],
                    k: int) -> tuple[int, int, int, int]:
    """A NotNext B: from a uniformly drawn sentence of a uniformly drawn document other than `d`, whole
    sentences up to `target` tokens: its first sentence, stop sentence and document, and the next draw."""
    r = int(u[k] * (len(doc_off) - 2))
    r += r >= d  # any document but this one
    r_first, r_last = doc_off[r], doc_off[r + 1]
    start = r_first + int(u[k + 1] * (r_last - r_first))
    stop = min(bisect_left(off, off[start] + target, start + 1, r_last + 1), r_last)
    return start, stop, r, k + 2


def _truncated(part: PartitionTokens, rows: _Rows, max_tokens: int,
               rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Token ranges a_start, a_end, b_start, b_end of the rows truncated to `max_tokens` (`truncation`, the
    tokens cut from the front drawn from `rng`, A's then B's), and the tokens cut from each row."""
    sent_off = part.sent_offsets
    a_start, a_end = sent_off[np.asarray(rows.a_first)], sent_off[np.asarray(rows.a_stop)]
    b_start, b_end = sent_off[np.asarray(rows.b_first)], sent_off[np.asarray(rows.b_stop)]
    cut_a, cut_b = truncation(a_end - a_start, b_end - b_start, max_tokens)
    front_a, front_b = rng.binomial(cut_a, 0.5), rng.binomial(cut_b, 0.5)
    return (a_start + front_a, a_end - (cut_a - front_a), b_start + front_b, b_end - (cut_b - front_b),
            cut_a + cut_b)


def make_sop_pairs(
    part: PartitionTokens,
    max_seq_length: int,
    short_seq_prob: float,
    rng: np.random.Generator,
    short_seq_by: str = "segment",
) -> tuple[Pairs, int]:
    """One dupe pass of ALBERT's sentence-order pairs, and the count of sentences left out of them.

    Chunks as `make_pairs` cuts them (target length, short_seq_prob by segment or document, A = the chunk's
    first 1..n-1 sentences, B = the rest), always from one document: a one-sentence chunk takes its
    document's next sentence, so every chunk has a B; a document's lone last sentence (the chunk before it
    took the rest) has no partner and is left out of this pass, and a one-sentence document gives no pair
    (the caller counts it as skipped). A and B are swapped in exactly half of the rows: every choice is free,
    so a running balance (swapped - kept) decides it, as in `make_pairs`, and each pass is balanced to one
    row. Truncation is `make_pairs`' (on A and B in text order), then the swap; provenance follows the
    segments as written.
    """
    max_tokens = max_seq_length - 3
    by_segment = check_short_seq_by(short_seq_by)
    # At most 2 draws per document and 2 per chunk (4 by segment; a chunk takes at least two sentences).
    u = uniforms(rng, 2 * part.num_documents + (2 if by_segment else 1) * len(part.sent_offsets))
    rows, unpaired = _sop_rows(part, u, max_tokens, short_seq_prob, by_segment)
    a_start, a_end, b_start, b_end, truncated = _truncated(part, rows, max_tokens, rng)
    swap = np.asarray(rows.label, dtype=bool)
    first, middle = np.asarray(rows.a_first, dtype=np.int64), np.asarray(rows.b_first, dtype=np.int64)
    docs = np.asarray(rows.a_doc, dtype=np.int64)
    pairs = Pairs(
        a_start=np.where(swap, b_start, a_start),
        a_end=np.where(swap, b_end, a_end),
        b_start=np.where(swap, a_start, b_start),
        b_end=np.where(swap, a_end, b_end),
        a_sentence=np.where(swap, middle, first),
        b_sentence=np.where(swap, first, middle),
        a_doc=docs,
        b_doc=docs,
        label=swap,
        truncated_tokens=truncated,
        short_target=np.asarray(rows.short, dtype=bool),
    )
    return pairs, unpaired


def _sop_rows(part: PartitionTokens, u: Sequence[float], max_tokens: int, short_seq_prob: float,
              by_segment: bool) -> tuple[_Rows, int]:
    """`make_sop_pairs`' chunks (A, B and whether to swap them), reading the uniforms `u` in order; and the
    count of sentences left without a partner."""
    off, doc_off = compact(part.sent_offsets), compact(part.doc_offsets)
    rows, k, balance, unpaired = _Rows(), 0, 0, 0
    for doc in range(part.num_documents):
        first, last = doc_off[doc], doc_off[doc + 1]
        if not by_segment:
            target, k = draw_target(u, k, max_tokens, short_seq_prob)
        if last - first < 2:
            continue
        while first < last - 1:
            if by_segment:
                target, k = draw_target(u, k, max_tokens, short_seq_prob)
            end = max(min(bisect_left(off, off[first] + target, first + 1, last + 1), last), first + 2)
            split = first + 1 + int(u[k] * (end - first - 1))  # A = [first, split), B = [split, end)
            swap, k = _balanced_choice(u, k + 1, balance)
            balance += 1 if swap else -1
            rows.add(first, split, doc, split, end, doc, swap, target < max_tokens)
            first = end
        unpaired += first < last
    return rows, unpaired


def check_short_seq_by(value: str) -> bool:
    """True for a draw per segment (chunk), False for one per document (the reference's)."""
    if value not in SHORT_SEQ_BY:
        raise ValueError(f"short_seq_by must be {' or '.join(SHORT_SEQ_BY)}, not {value!r}")
    return value == "segment"


def draw_target(u: Sequence[float], k: int, max_tokens: int, short_seq_prob: float) -> tuple[int, int]:
    """A target length as BERT draws it (with probability short_seq_prob uniform in [2, max_tokens]), from
    the uniforms `u` at `k`; and where the next draw is. A row's target is short when below max_tokens."""
    if u[k] < short_seq_prob:
        return 2 + int(u[k + 1] * (max_tokens - 1)), k + 2
    return max_tokens, k + 1


def truncation(len_a: np.ndarray, len_b: np.ndarray, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens `truncate_seq_pair` removes from A and from B: one at a time from the longer (B on a tie)."""
    excess = np.maximum(len_a + len_b - max_tokens, 0)
    diff = len_a - len_b
    first = np.minimum(np.abs(diff), excess)  # taken from the longer until both are equal
    rest = excess - first  # then alternately, B first
    cut_a = np.where(diff > 0, first, 0) + rest // 2
    cut_b = np.where(diff < 0, first, 0) + rest - rest // 2
    return cut_a, cut_b


def gather(tokens: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.ListArray:
    """The token ranges as an Arrow list column, built from offsets and values (no Python lists)."""
    lengths = ends - starts
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = np.empty(offsets[-1], dtype=tokens.dtype)
    heads = offsets[:-1]
    for r in range(0, len(lengths), GATHER_ROWS):  # by blocks: an int64 index of every token is 4x them
        rows = slice(r, r + GATHER_ROWS)
        lo, hi = offsets[r], offsets[min(r + GATHER_ROWS, len(lengths))]
        shift = starts[rows] - (heads[rows] - lo)
        values[lo:hi] = tokens[np.arange(hi - lo, dtype=np.int64) + np.repeat(shift, lengths[rows])]
    return pa.ListArray.from_arrays(arrow.from_numpy(offsets), arrow.from_numpy(values))


def pairs_table(part: PartitionTokens, pairs: Pairs, objective: str = DEFAULT) -> pa.Table:
    """The pairs in the `build-pairs` Parquet schema, with provenance (document and sentence of A and B)."""
    doc_ids = arrow.strings(part.doc_ids)
    return pa.Table.from_arrays(
        [
            gather(part.tokens, pairs.a_start, pairs.a_end),
            gather(part.tokens, pairs.b_start, pairs.b_end),
            arrow.from_numpy(pairs.label),
            doc_ids.take(arrow.from_numpy(pairs.a_doc)),
            arrow.from_numpy(part.sent_index[pairs.a_sentence], pa.uint32()),
            doc_ids.take(arrow.from_numpy(pairs.b_doc)),
            arrow.from_numpy(part.sent_index[pairs.b_sentence], pa.uint32()),
        ],
        schema=pairs_schema(part.tokens.dtype, objective),
    )
