"""Sentences -> token ids, once per document (not once per dupe pass), kept in a flat token cache.

A document is encoded in one call with its sentences joined by the `[SEP]` token: WordPiece tokens never cross
the separator, so cutting at the `[SEP]` ids gives exactly the tokens of each sentence, and one call per
document is much cheaper than one per sentence (tokenizers' per-input overhead dominates short sentences).
A document whose text itself contains `[SEP]` is detected (wrong separator count) and encoded sentence by
sentence instead.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from corpusprep.engine.files import atomic_path
from corpusprep.pair.instances import PartitionTokens


def encode_documents(
    tokenizer,
    documents: Sequence[Sequence[str]],
    doc_ids: list[str],
    *,
    sep_id: int,
    max_tokens: int,
    dtype: np.dtype,
) -> tuple[PartitionTokens, dict[str, int]]:
    """Tokenize documents given as sentence lists. Sentences with no tokens are dropped (their index is kept
    in `sent_index`, so provenance still points into the original list); a sentence longer than `max_tokens`
    keeps its first `max_tokens` tokens. Documents left with no sentence stay, empty (the caller skips
    them)."""
    separator = f" {tokenizer.id_to_token(sep_id)} "
    encodings = tokenizer.encode_batch_fast([separator.join(s) for s in documents], add_special_tokens=False)
    pieces, starts, ends, sent_doc, sent_index = [], [], [], [], []
    base = 0
    for d, (sentences, encoding) in enumerate(zip(documents, encodings, strict=True)):
        if not sentences:
            continue
        ids = np.asarray(encoding.ids, dtype=np.int64)
        cuts = np.flatnonzero(ids == sep_id)
        if len(cuts) == len(sentences) - 1:
            start, end = np.concatenate([[0], cuts + 1]), np.append(cuts, len(ids))
        else:  # the text holds the separator itself: fall back to one encoding per sentence
            encoded = tokenizer.encode_batch_fast(list(sentences), add_special_tokens=False)
            lengths = np.array([len(e.ids) for e in encoded], dtype=np.int64)
            ids = np.array([i for e in encoded for i in e.ids], dtype=np.int64)
            end = np.cumsum(lengths)
            start = end - lengths
        pieces.append(ids)
        starts.append(start + base)
        ends.append(end + base)
        sent_doc.append(np.full(len(sentences), d, dtype=np.int64))
        sent_index.append(np.arange(len(sentences), dtype=np.uint32))
        base += len(ids)
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        pieces, starts, ends, sent_doc, sent_index = (
            [empty],
            [empty],
            [empty],
            [empty],
            [empty.astype(np.uint32)],
        )
    ids, start, end = np.concatenate(pieces), np.concatenate(starts), np.concatenate(ends)
    sent_doc, sent_idx = np.concatenate(sent_doc), np.concatenate(sent_index)
    lengths = end - start
    keep = lengths > 0
    long = lengths > max_tokens
    stats = {
        "sentences": int(keep.sum()),
        "empty_sentences": int((~keep).sum()),
        "sentences_truncated": int(long.sum()),
        "sentence_tokens_truncated": int((lengths[long] - max_tokens).sum()),
    }
    start, end = start[keep], np.minimum(end, start + max_tokens)[keep]
    sent_offsets = np.zeros(len(start) + 1, dtype=np.int64)
    np.cumsum(end - start, out=sent_offsets[1:])
    index = np.arange(sent_offsets[-1], dtype=np.int64) + np.repeat(start - sent_offsets[:-1], end - start)
    doc_offsets = np.zeros(len(documents) + 1, dtype=np.int64)
    np.cumsum(np.bincount(sent_doc[keep], minlength=len(documents)), out=doc_offsets[1:])
    stats["tokens"] = int(sent_offsets[-1])
    part = PartitionTokens(ids[index].astype(dtype), sent_offsets, sent_idx[keep], doc_offsets, list(doc_ids))
    return part, stats


def select_documents(part: PartitionTokens, docs: np.ndarray) -> PartitionTokens:
    """The given documents (indices, ascending) as a partition of their own."""
    doc_off = part.doc_offsets
    sent_counts = doc_off[docs + 1] - doc_off[docs]
    sentences = np.arange(sent_counts.sum(), dtype=np.int64) + np.repeat(
        doc_off[docs] - np.concatenate([[0], np.cumsum(sent_counts)[:-1]]), sent_counts
    )
    s_off = part.sent_offsets
    lengths = s_off[sentences + 1] - s_off[sentences]
    sent_offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=sent_offsets[1:])
    index = np.arange(sent_offsets[-1], dtype=np.int64) + np.repeat(
        s_off[sentences] - sent_offsets[:-1], lengths
    )
    doc_offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(sent_counts, out=doc_offsets[1:])
    return PartitionTokens(
        part.tokens[index],
        sent_offsets,
        part.sent_index[sentences],
        doc_offsets,
        [part.doc_ids[d] for d in docs],
    )


def concat_partitions(parts: Sequence[PartitionTokens], dtype: np.dtype) -> PartitionTokens:
    """Documents of several caches, in order, as one partition."""
    if not parts:
        zero = np.zeros(1, dtype=np.int64)
        return PartitionTokens(np.zeros(0, dtype=dtype), zero, np.zeros(0, dtype=np.uint32), zero, [])
    token_base = np.cumsum([0] + [len(p.tokens) for p in parts])
    sent_base = np.cumsum([0] + [len(p.sent_index) for p in parts])
    return PartitionTokens(
        tokens=np.concatenate([p.tokens for p in parts]).astype(dtype, copy=False),
        sent_offsets=np.concatenate(
            [[0]] + [p.sent_offsets[1:] + b for p, b in zip(parts, token_base[:-1], strict=True)]
        ),
        sent_index=np.concatenate([p.sent_index for p in parts]),
        doc_offsets=np.concatenate(
            [[0]] + [p.doc_offsets[1:] + b for p, b in zip(parts, sent_base[:-1], strict=True)]
        ),
        doc_ids=[i for p in parts for i in p.doc_ids],
    )


def save_cache(path: Path, part: PartitionTokens) -> None:
    buffer = io.BytesIO()
    np.savez(
        buffer,
        tokens=part.tokens,
        sent_offsets=part.sent_offsets,
        sent_index=part.sent_index,
        doc_offsets=part.doc_offsets,
        doc_ids=np.array(part.doc_ids, dtype=str),
    )
    with atomic_path(path) as tmp:
        tmp.write_bytes(buffer.getbuffer())


def load_cache(path: Path) -> PartitionTokens:
    with np.load(path) as data:
        return PartitionTokens(
            data["tokens"],
            data["sent_offsets"],
            data["sent_index"],
            data["doc_offsets"],
            data["doc_ids"].tolist(),
        )
