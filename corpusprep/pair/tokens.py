"""Sentences -> token ids, once per document (not once per dupe pass), kept in a flat token cache.

Sentences are encoded with their document's neighbours joined by the `[SEP]` token: WordPiece tokens never
cross the separator, so cutting at the `[SEP]` ids gives exactly the tokens of each sentence, and one call per
run of sentences is much cheaper than one per sentence (tokenizers' per-input overhead dominates short
sentences). A run (a "piece") holds at most PIECE_CHARS characters and one tokenizer call at most BATCH_CHARS:
the tokenizer keeps tens of bytes per input byte while it works (alignments, offsets, token strings), so a
book-length document is encoded piece by piece, in bounded memory, with the same result. A piece whose text
itself contains `[SEP]` is detected (wrong separator count) and encoded sentence by sentence instead.

With BERT's pipeline (BertNormalizer, BertPreTokenizer, WordPiece) a text's tokens are the concatenation of
its space-separated words' tokens: the normalizer works character by character and a space always ends a
pre-token. Such tokenizers go through `WordCache`, which encodes each distinct word once (Wikipedia text
repeats ~8 times per distinct word in 4 MB) and assembles sentences from the cache with numpy: about a
third of the tokenizer's own time, with the same ids. Other tokenizers take the path above.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpusprep.engine import arrow, storage
from corpusprep.errors import DataError
from corpusprep.pair.instances import PartitionTokens

PIECE_CHARS = 256 * 1024  # characters of sentences per tokenizer input
BATCH_CHARS = 4 * 1024 * 1024  # characters per tokenizer call
WORDS_PER_CALL = 4096  # distinct words joined into one tokenizer input
MAX_CACHED_WORDS = 2_000_000  # bounds a process's word cache (then it starts again)


@functools.lru_cache(maxsize=4)  # asked once per split and chunk; serialising a 30k vocab costs ~10 ms
def splits_on_spaces(tokenizer) -> bool:
    """True when every text encodes as the concatenation of its " "-separated words' encodings: a
    character-wise normalizer (BertNormalizer), a pre-tokenizer that ends a word at every space, WordPiece
    (no merges across words), added tokens that neither hold nor strip spaces, and no truncation or padding
    (they would apply to the joined words)."""
    config = json.loads(tokenizer.to_str())
    normalizer, pre = config.get("normalizer") or {}, config.get("pre_tokenizer") or {}
    added = config.get("added_tokens") or []
    return (
        normalizer.get("type") in (None, "BertNormalizer")
        and pre.get("type") in ("BertPreTokenizer", "WhitespaceSplit")
        and (config.get("model") or {}).get("type") == "WordPiece"
        and config.get("truncation") is None
        and config.get("padding") is None
        and all(
            not (t.get("lstrip") or t.get("rstrip") or t.get("single_word"))
            and not any(map(str.isspace, t["content"]))
            for t in added
        )
    )


@functools.lru_cache(maxsize=4)
def _plain_word_tokenizer(tokenizer) -> tuple[Any, bool, Callable[[str], Any]] | None:
    """(the tokenizer without its normalizer, whether to lowercase first, a search for what rules a word out)
    for words of printable ASCII, or None. On such a word BertNormalizer only lowercases (when set): cleaning,
    CJK spacing and accent stripping (NFD, then dropping combining marks) change no ASCII character.
    Skipping it gives the same ids for a third less of the tokenizer's time (it tracks alignments character by
    character). A word that may hold an added token ([SEP], found before normalizing) keeps the full path."""
    from tokenizers import Tokenizer

    config = json.loads(tokenizer.to_str())
    normalizer = config.get("normalizer") or {}
    if normalizer.get("type") != "BertNormalizer":
        return None
    plain = Tokenizer.from_str(tokenizer.to_str())
    plain.normalizer = None
    firsts = {t["content"][0] for t in config.get("added_tokens") or [] if t["content"]}
    added = re.compile(f"[{re.escape(''.join(sorted(firsts)))}]" if firsts else "(?!)").search
    return plain, bool(normalizer.get("lowercase", True)), added


@functools.lru_cache(maxsize=4)
def word_cache(tokenizer, sep_id: int) -> WordCache:
    """The process's cache for this tokenizer (bounded by MAX_CACHED_WORDS)."""
    return WordCache(tokenizer, sep_id)


class WordCache:
    """Token ids of distinct words, encoded once and kept as flat arrays (CSR: word i's ids are
    tokens[starts[i]:starts[i] + lengths[i]]); for tokenizers where `splits_on_spaces` holds.

    One cache serves every task of a process (`word_cache`): a word's ids do not depend on its neighbours,
    and common words recur in every chunk (10 MB of Wikipedia: 212k distinct words chunk by chunk, 161k in
    all)."""

    def __init__(self, tokenizer, sep_id: int) -> None:
        self.tokenizer, self.sep_id = tokenizer, sep_id
        self.plain = _plain_word_tokenizer(tokenizer)
        # New words are encoded in groups joined by a punctuation mark that is one vocab token of its own
        # (BERT splits punctuation off, so it never merges with a neighbour): cheaper for the tokenizer than
        # [SEP], which splits its input into one segment per word. A group holding every mark is joined by
        # [SEP], and one holding [SEP] too is encoded word by word.
        self.marks = [(f" {c} ", i) for c, i in _marks(tokenizer)]
        self.marks.append((f" {tokenizer.id_to_token(sep_id)} ", sep_id))
        self._reset()

    def _reset(self) -> None:
        self.index: dict[str, int] = {}
        self.tokens = np.zeros(0, np.int64)
        self.starts = np.zeros(0, np.int64)
        self.lengths = np.zeros(0, np.int64)

    def _encode_groups(
        self, tokenizer, groups: list[list[str]], attempt: int
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(tokens, per-word lengths) of each group of words."""
        if attempt == len(self.marks):  # every mark occurs inside some word: one input per word
            encoded = [tokenizer.encode_batch_fast(g, add_special_tokens=False) for g in groups]
            return [
                (
                    np.array([t for e in group for t in e.ids], dtype=np.int64),
                    np.array([len(e.ids) for e in group], dtype=np.int64),
                )
                for group in encoded
            ]
        mark, mark_id = self.marks[attempt]
        # A group whose text holds the mark itself goes straight to the next (its count of marks would be
        # wrong); one that shows a wrong count anyway (a character the normalizer turns into the mark) too.
        tried = [g for g, group in enumerate(groups) if mark.strip() not in "".join(group)]
        retry = sorted(set(range(len(groups))).difference(tried))
        texts = [mark.join(groups[g]) for g in tried]
        encodings = tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        results: list = [None] * len(groups)
        for g, encoding in zip(tried, encodings, strict=True):
            ids = np.array(encoding.ids, dtype=np.int64)
            is_mark = ids == mark_id
            cuts = np.flatnonzero(is_mark)
            if len(cuts) == len(groups[g]) - 1:
                results[g] = (ids[~is_mark], np.diff(np.concatenate([[-1], cuts, [len(ids)]])) - 1)
            else:
                retry.append(g)
        if retry:
            retry.sort()
            for g, result in zip(
                retry, self._encode_groups(tokenizer, [groups[g] for g in retry], attempt + 1), strict=True
            ):
                results[g] = result
        return results

    def _add(self, words: list[str]) -> None:
        if self.plain is not None:  # printable ASCII words skip the normalizer (see _plain_word_tokenizer)
            plain_tokenizer, lowercase, added = self.plain
            is_plain = [w.isascii() and w.isprintable() and not added(w) for w in words]
            plain = [w for w, p in zip(words, is_plain, strict=True) if p]
            words = plain + [w for w, p in zip(words, is_plain, strict=True) if not p]
            parts = [
                (plain_tokenizer, [w.lower() for w in plain] if lowercase else plain),
                (self.tokenizer, words[len(plain) :]),
            ]
        else:
            parts = [(self.tokenizer, words)]
        encoded = []
        for tokenizer, part in parts:
            groups = [part[k : k + WORDS_PER_CALL] for k in range(0, len(part), WORDS_PER_CALL)]
            encoded += self._encode_groups(tokenizer, groups, 0)
        self.index.update(zip(words, range(len(self.index), len(self.index) + len(words)), strict=True))
        self.tokens = np.concatenate([self.tokens, *(t for t, _ in encoded)])
        self.lengths = np.concatenate([self.lengths, *(n for _, n in encoded)])
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    def encode(self, sentences: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """All the sentences' token ids, concatenated, and each sentence's count of ids."""
        # Split and deduplicate in Arrow: no Python string per word.
        lists = pc.split_pattern(arrow.strings(sentences, pa.large_string()), " ")
        words_per_sentence = np.diff(arrow.to_numpy(lists.offsets))
        encoded = pc.dictionary_encode(lists.flatten())
        distinct = encoded.dictionary.to_pylist()
        codes = arrow.to_numpy(encoded.indices)
        new = [w for w in distinct if w not in self.index]  # first-seen order: deterministic
        if len(self.index) + len(new) > MAX_CACHED_WORDS:
            self._reset()
            new = distinct
        if new:
            self._add(new)
        word = np.fromiter(map(self.index.__getitem__, distinct), np.int64, len(distinct))[codes]
        lengths = self.lengths[word]
        ends = np.cumsum(lengths)
        ids = self.tokens[
            np.arange(ends[-1] if len(ends) else 0, dtype=np.int64)
            + np.repeat(self.starts[word] - (ends - lengths), lengths)
        ]
        bounds = np.concatenate([[0], np.cumsum(words_per_sentence)])
        token_ends = np.concatenate([[0], ends])
        return ids, token_ends[bounds[1:]] - token_ends[bounds[:-1]]


def _marks(tokenizer) -> list[tuple[str, int]]:
    """Punctuation marks that encode, between two words, as exactly one vocab token of their own."""
    marks = []
    for mark in ("|", "~", "^", "§", "¶"):
        mark_id = tokenizer.token_to_id(mark)
        ids = tokenizer.encode_batch_fast([f"a {mark} a"], add_special_tokens=False)[0].ids
        if mark_id is not None and len(ids) == 3 and ids[1] == mark_id and ids[0] != mark_id:
            marks.append((mark, mark_id))
    return marks


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
        size += sum(map(len, documents[d][i:j]))
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
    cache = word_cache(tokenizer, sep_id) if splits_on_spaces(tokenizer) else None
    for batch in _batches(documents, len(separator)):
        ids, start, end = _encode_batch(tokenizer, cache, documents, batch, sep_id)
        # Every sentence of the batch at once (a batch of tiny documents holds ~10^5 pieces): its document
        # and index there; drop empty sentences, truncate long ones, keep only the tokens that stay.
        piece_doc, i, j = np.array(batch, dtype=np.int64).reshape(-1, 3).T
        per = j - i
        n = end - start
        keep, long = n > 0, n > max_tokens
        stats["sentences"] += int(np.count_nonzero(keep))
        stats["empty_sentences"] += int(len(n) - np.count_nonzero(keep))
        stats["sentences_truncated"] += int(np.count_nonzero(long))
        stats["sentence_tokens_truncated"] += int((n[long] - max_tokens).sum())
        start, n = start[keep], np.minimum(n, max_tokens)[keep]
        offsets = np.concatenate([[0], np.cumsum(n)])
        index = np.arange(offsets[-1], dtype=np.int64) + np.repeat(start - offsets[:-1], n)
        tokens.append(ids[index].astype(dtype))
        lengths.append(n)
        sent_doc.append(np.repeat(piece_doc, per)[keep])
        first = np.cumsum(per) - per  # each piece's first sentence within the batch
        sent_index.append((np.arange(per.sum()) + np.repeat(i - first, per)).astype(np.uint32)[keep])
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


def _encode_batch(
    tokenizer, cache: WordCache | None, documents: Sequence[Sequence[str]], batch, sep_id: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ids of a batch's sentences, back to back, and each sentence's start and end among them."""
    if cache is not None:
        ids, counts = cache.encode([s for d, i, j in batch for s in documents[d][i:j]])
        ends = np.cumsum(counts)
        return ids, ends - counts, ends
    separator = f" {tokenizer.id_to_token(sep_id)} "
    texts = [separator.join(documents[d][i:j]) for d, i, j in batch]
    encodings = tokenizer.encode_batch_fast(texts, add_special_tokens=False)
    del texts
    pieces, starts, ends, base = [], [], [], 0
    for (d, i, j), encoding in zip(batch, encodings, strict=True):
        ids = np.array(encoding.ids, dtype=np.int64)
        cuts = np.flatnonzero(ids == sep_id)
        if len(cuts) == j - i - 1:
            start, end = np.concatenate([[0], cuts + 1]), np.append(cuts, len(ids))
        else:  # the text holds the separator itself: fall back to one encoding per sentence
            encoded = tokenizer.encode_batch_fast(list(documents[d][i:j]), add_special_tokens=False)
            counts = np.array([len(e.ids) for e in encoded], dtype=np.int64)
            end = np.cumsum(counts)
            ids, start = np.array([t for e in encoded for t in e.ids], dtype=np.int64), end - counts
        pieces.append(ids)
        starts.append(start + base)
        ends.append(end + base)
        base += len(ids)
    return np.concatenate(pieces), np.concatenate(starts), np.concatenate(ends)


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


# The work files (document chunks, token chunks): Arrow IPC with zstd buffers, about a third of the raw size
# on ordinary text and half on tiny documents (ids and offsets compress well), for little time.
WORK_IPC = pa.ipc.IpcWriteOptions(compression="zstd")


def token_chunk_schema(dtype: np.dtype) -> pa.Schema:
    """A token chunk's columns: a row per document, its sentences' first indexes and lengths, its tokens."""
    return pa.schema([
        ("doc_id", pa.string()),
        ("sent_index", pa.large_list(pa.uint32())),
        ("sent_lengths", pa.large_list(pa.uint32())),
        ("tokens", pa.large_list(pa.from_numpy_dtype(dtype))),
    ])


@contextlib.contextmanager
def token_chunk_writer(path: Path, dtype: np.dtype) -> Iterator[Callable[[str, PartitionTokens], int]]:
    """`write(name, part)` for each (split, partition) a chunk touches: one Arrow IPC file per chunk, a record
    batch per partition named in its metadata (returns the batch's index), written atomically. One file per
    chunk, not per (chunk, partition): the work files follow the bytes of the corpus, not its documents."""
    schema = token_chunk_schema(dtype)
    count = 0
    with storage.atomic_path(path) as tmp, pa.ipc.new_file(tmp, schema, options=WORK_IPC) as writer:

        def write(name: str, part: PartitionTokens) -> int:
            nonlocal count
            starts = part.sent_offsets[part.doc_offsets]  # each document's first token
            lengths = np.diff(part.sent_offsets).astype(np.uint32)
            columns = [
                arrow.strings(part.doc_ids),
                *(pa.LargeListArray.from_arrays(arrow.from_numpy(offsets), arrow.from_numpy(values))
                  for offsets, values in ((part.doc_offsets, part.sent_index), (part.doc_offsets, lengths),
                                          (starts, part.tokens.astype(dtype, copy=False)))),
            ]
            writer.write_batch(pa.record_batch(columns, schema=schema), custom_metadata={"partition": name})
            count += 1
            return count - 1

        yield write


def read_token_batch(path: Path, index: int, name: str, documents: int, dtype: np.dtype) -> PartitionTokens:
    """The documents of partition `name` in a token chunk (its batch `index`, which must hold `documents`
    rows): only that batch is read. A file that does not hold what its task recorded is one DataError."""
    batch, found = None, None
    with contextlib.suppress(pa.ArrowInvalid), storage.open_file(path, "rb") as f:  # cut short: as missing
        reader = pa.ipc.open_file(f)
        if 0 <= index < reader.num_record_batches:
            batch, metadata = reader.get_batch_with_custom_metadata(index)
            found = (metadata or {}).get(b"partition")
    if (found != name.encode() or batch is None or batch.num_rows != documents
            or batch.schema != token_chunk_schema(dtype)):
        raise DataError(f"{path}: batch {index} is not the {documents:,} documents of partition {name} its "
                        "tokenize task recorded; pass --overwrite to rebuild")
    sentences = batch.column("sent_lengths")
    doc_offsets = arrow.to_numpy(sentences.offsets).astype(np.int64)
    lengths = arrow.to_numpy(sentences.flatten())
    sent_offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=sent_offsets[1:])
    part = PartitionTokens(  # views into the batch: concat_partitions copies what it keeps
        arrow.to_numpy(batch.column("tokens").flatten()),
        sent_offsets,
        arrow.to_numpy(batch.column("sent_index").flatten()),
        doc_offsets - doc_offsets[0],
        batch.column("doc_id").to_pylist(),
    )
    if len(part.tokens) != sent_offsets[-1] or len(part.sent_index) != len(lengths):
        raise DataError(f"{path}: partition {name}: its token and sentence counts disagree; pass --overwrite "
                        "to rebuild")
    return part
