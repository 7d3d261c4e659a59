"""Sentences -> token ids, once per document (not once per dupe pass), kept in a flat token cache.

Sentences are encoded with their document's neighbours joined by the `[SEP]` token: WordPiece tokens never
cross the separator, so cutting at the `[SEP]` ids gives exactly the tokens of each sentence, and one call per
run of sentences is much cheaper than one per sentence (tokenizers' per-input overhead dominates short
sentences). A run (a "piece") holds at most PIECE_CHARS characters and one tokenizer call at most BATCH_CHARS:
the tokenizer keeps tens of bytes per input byte while it works (alignments, offsets, token strings), so a
book-length document is encoded piece by piece, in bounded memory, with the same result. A piece whose text
itself contains `[SEP]` is detected (wrong separator count) and encoded sentence by sentence instead.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from corpusprep.engine.files import atomic_path
from corpusprep.pair.instances import PartitionTokens

PIECE_CHARS = 256 * 1024  # characters of sentences per tokenizer input
BATCH_CHARS = 4 * 1024 * 1024  # characters per tokenizer call


def _pieces(documents: Sequence[Sequence[str]], gap: int) -> Iterator[tuple[int, int, int]]:
    """(document, first sentence, end sentence) runs of at most PIECE_CHARS (a longer sentence: alone)."""
    for d, sentences in enumerate(documents):
        first, size = 0, 0
        for i, sentence in enumerate(sentences):
            if size and size + len(sentence) > PIECE_CHARS:
                yield d, first, i
                first, size = i, 0
            size += len(sentence) + gap
        if sentences:
            yield d, first, len(sentences)


def _batches(documents: Sequence[Sequence[str]], gap: int) -> Iterator[list[tuple[int, int, int]]]:
    """Pieces grouped into tokenizer calls of about BATCH_CHARS."""
    batch: list[tuple[int, int, int]] = []
    size = 0
    for piece in _pieces(documents, gap):
        d, i, j = piece
        batch.append(piece)
        size += sum(len(s) for s in documents[d][i:j])
        if size >= BATCH_CHARS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


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
    tokens, lengths, sent_doc, sent_index = [], [], [], []
    counted = ("sentences", "empty_sentences", "sentences_truncated", "sentence_tokens_truncated")
    stats = dict.fromkeys(counted, 0)
    for batch in _batches(documents, len(separator)):
        texts = [separator.join(documents[d][i:j]) for d, i, j in batch]
        encodings = tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        del texts
        for (d, i, j), encoding in zip(batch, encodings, strict=True):
            ids = np.array(encoding.ids, dtype=np.int64)
            cuts = np.flatnonzero(ids == sep_id)
            if len(cuts) == j - i - 1:
                start, end = np.concatenate([[0], cuts + 1]), np.append(cuts, len(ids))
            else:  # the text holds the separator itself: fall back to one encoding per sentence
                encoded = tokenizer.encode_batch_fast(list(documents[d][i:j]), add_special_tokens=False)
                counts = np.array([len(e.ids) for e in encoded], dtype=np.int64)
                ids = np.array([t for e in encoded for t in e.ids], dtype=np.int64)
                end = np.cumsum(counts)
                start = end - counts
            # Drop empty sentences, truncate long ones, and keep only the tokens that stay.
            n = end - start
            keep, long = n > 0, n > max_tokens
            stats["sentences"] += int(keep.sum())
            stats["empty_sentences"] += int((~keep).sum())
            stats["sentences_truncated"] += int(long.sum())
            stats["sentence_tokens_truncated"] += int((n[long] - max_tokens).sum())
            start, n = start[keep], np.minimum(n, max_tokens)[keep]
            offsets = np.concatenate([[0], np.cumsum(n)])
            index = np.arange(offsets[-1], dtype=np.int64) + np.repeat(start - offsets[:-1], n)
            tokens.append(ids[index].astype(dtype))
            lengths.append(n)
            sent_doc.append(np.full(len(n), d, dtype=np.int64))
            sent_index.append(np.arange(i, j, dtype=np.uint32)[keep])
        del encodings
    if not tokens:
        tokens, lengths, sent_doc, sent_index = [np.zeros(0, dtype)], [np.zeros(0, np.int64)], [], []
    sent_offsets = np.concatenate([[0], np.cumsum(np.concatenate(lengths))]).astype(np.int64)
    sent_docs = np.concatenate(sent_doc) if sent_doc else np.zeros(0, np.int64)
    doc_offsets = np.zeros(len(documents) + 1, dtype=np.int64)
    np.cumsum(np.bincount(sent_docs, minlength=len(documents)), out=doc_offsets[1:])
    stats["tokens"] = int(sent_offsets[-1])
    part = PartitionTokens(
        np.concatenate(tokens).astype(dtype, copy=False),
        sent_offsets,
        np.concatenate(sent_index) if sent_index else np.zeros(0, np.uint32),
        doc_offsets,
        list(doc_ids),
    )
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
