"""The tasks of `build-pairs` (see pair/build.py for the stages): each a function of one chunk or partition
that writes its own outputs, run by the executor in any process, with picklable arguments (paths, names and
options, never objects holding data).

`PARTITIONS` is the one process-level cache of a stage: the token partition a pair task loaded last, kept for
the partition's next dupe pass (see `PartitionCache`).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from corpusprep.engine import arrow, storage
from corpusprep.engine.executor import OUTPUTS_KEY, Task
from corpusprep.engine.files import atomic_path
from corpusprep.engine.progress import Reporter
from corpusprep.engine.rng import rng_for, stable_hash, unit_interval
from corpusprep.objectives import objective as objective_spec
from corpusprep.objectives.base import NO_SENTENCES
from corpusprep.pair.instances import PartitionTokens
from corpusprep.pair.options import PairOptions
from corpusprep.pair.schema import SPLITS
from corpusprep.pair.sizes import ChunkRule
from corpusprep.pair.tokens import (
    WORK_IPC,
    concat_partitions,
    encode_documents,
    read_token_batch,
    select_documents,
    token_chunk_writer,
)
from corpusprep.read import iter_documents
from corpusprep.read.document import ReadStats
from corpusprep.split import make_splitter


def document_split(seed: int, doc_id: str, validation_fraction: float) -> str:
    return "validation" if unit_interval(seed, "split", doc_id) < validation_fraction else "train"


def document_partition(seed: int, doc_id: str, partitions: int) -> int:
    return stable_hash(seed, "partition", doc_id) % partitions


@dataclass(frozen=True)
class TokenizeArgs:
    chunk: Path
    output: Path  # the chunk's token file (tokens.token_chunk_writer)
    tokenizer_json: Path
    sep_id: int
    token_dtype: str
    options: PairOptions
    partitions: dict[str, int]


@dataclass(frozen=True)
class PairArgs:
    split: str
    partition: int
    dupe_pass: int
    # the partition's documents: (token file, batch index, documents) of each chunk that holds some
    sources: tuple[tuple[Path, int, int], ...]
    output: Path
    token_dtype: str
    options: PairOptions


@functools.lru_cache(maxsize=2)
def load_tokenizer(path: str):
    from tokenizers import Tokenizer

    return Tokenizer.from_str(storage.read_text(path, encoding="utf-8"))  # a vocab on a store too


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Workers are processes: tokenizers' own thread pool would only oversubscribe the cores."""
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        yield
    finally:
        if before is None:
            del os.environ["TOKENIZERS_PARALLELISM"]
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = before


def tokenize_task(task: Task) -> dict[str, Any]:
    """Split and tokenize one chunk of documents; write its token file, a batch per (split, partition)."""
    args: TokenizeArgs = task.args
    opts = args.options
    with storage.open_file(args.chunk, "rb") as f:
        table = pa.ipc.open_file(f).read_all()
    ids = table.column("id").to_pylist()
    texts = table.column("text").to_pylist()
    presplit = table.column("sentences").to_pylist()
    splitter = None
    documents = []
    for text, sentences in zip(texts, presplit, strict=True):
        if sentences is not None:  # as `corpusprep sentences` does, so sentence indexes agree with its output
            sentences = [s.strip() for s in sentences if s and not s.isspace()]
        else:
            if splitter is None:
                splitter = make_splitter(opts.splitter, opts.language, opts.line_breaks)
            sentences = splitter(text)
        documents.append(sentences)
    tokenizer = load_tokenizer(str(args.tokenizer_json))
    splits = ["validation" if v else "train" for v in arrow.to_numpy(table.column("validation")).tolist()]
    stats: dict[str, Any] = {"partition_documents": {}}
    dtype = np.dtype(args.token_dtype)
    with token_chunk_writer(args.output, dtype) as write:  # a batch per (split, partition), in that order
        for split in SPLITS:
            members = [d for d, s in enumerate(splits) if s == split]
            with _one_thread():
                part, counts = encode_documents(
                    tokenizer,
                    [documents[d] for d in members],
                    [ids[d] for d in members],
                    sep_id=args.sep_id,
                    max_tokens=opts.max_seq_length - objective_spec(opts.objective).specials,
                    dtype=dtype,
                )
            usable = np.flatnonzero(np.diff(part.doc_offsets) > 0)
            stats[split] = {
                "documents": len(members),
                "skipped": {NO_SENTENCES: len(members) - len(usable)},
                "multi_sentence_documents": int(np.count_nonzero(np.diff(part.doc_offsets) >= 2)),
                **counts,
                "unk_tokens": int(np.count_nonzero(part.tokens == tokenizer.token_to_id("[UNK]"))),
            }
            partitions = np.array(
                [document_partition(opts.seed, part.doc_ids[d], args.partitions[split]) for d in usable],
                dtype=np.int64,
            )
            for p in np.unique(partitions).tolist():
                docs = usable[partitions == p]
                write(partition_name(split, p), select_documents(part, docs))
                stats["partition_documents"][partition_name(split, p)] = len(docs)
    root = args.output.parents[2]  # PAIRS_DIR (the file is PAIRS_DIR/.work/tokens/cNNNNNN.arrow)
    return {**stats, OUTPUTS_KEY: [args.output.relative_to(root).as_posix()]}


def partition_name(split: str, partition: int) -> str:
    """How stats and token files name a partition: "train/00042"."""
    return f"{split}/{partition:05d}"


class PartitionCache:
    """A partition's documents from its token batches, the last one loaded kept: a partition's dupe passes
    are consecutive tasks, so the next pass reuses it (read-only: every pass sees the same arrays). One at
    a time, so what a process holds stays one partition; a token file changed since (size, mtime) reloads.
    Each process (a pool worker, a Ray worker) has its own."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._part: PartitionTokens | None = None

    def get(self, name: str, sources: Sequence[tuple[Path, int, int]], dtype: np.dtype) -> PartitionTokens:
        files = [(str(path), (st := storage.stat(path)).st_size, st.st_mtime_ns) for path, _, _ in sources]
        key = (name, dtype.str, tuple(sources), files)
        if self._key != key:
            self._key = self._part = None  # drop the previous partition before loading the next
            part = concat_partitions([read_token_batch(path, index, name, documents, dtype)
                                      for path, index, documents in sources], dtype)
            for array in (part.tokens, part.sent_offsets, part.sent_index, part.doc_offsets):
                array.flags.writeable = False
            self._key, self._part = key, part
        return self._part


PARTITIONS = PartitionCache()  # this process's


def pair_task(task: Task) -> dict[str, Any]:
    """One dupe pass over one partition: build the pairs and write them as one Parquet file."""
    args: PairArgs = task.args
    opts = args.options
    dtype = np.dtype(args.token_dtype)
    part = PARTITIONS.get(partition_name(args.split, args.partition), args.sources, dtype)
    rng = rng_for(opts.seed, "pairs", args.split, args.partition, args.dupe_pass)
    table, stats = objective_spec(opts.objective).rows(part, opts, rng, args.dupe_pass)
    storage.write_table(table, args.output, compression="zstd", compression_level=1)
    if args.dupe_pass > 0:  # documents are counted once, in pass 0
        del stats["documents_used"], stats["documents_skipped"]
    return {args.split: {"files": 1, **stats}}


@dataclass(frozen=True)
class ReadArgs:
    inputs: tuple[str, ...]
    read_options: Any
    options: PairOptions
    work: Path


def read_stage(task: Task, reporter: Reporter) -> dict[str, Any]:
    """Stream the documents once into chunk files, counting them per split (that fixes the partitions)."""
    args: ReadArgs = task.args
    options, work = args.options, args.work
    read_stats = ReadStats()
    counts = dict.fromkeys(SPLITS, 0)
    chunk: list = []
    validation: list[bool] = []  # each document's split, drawn once
    chars = dict.fromkeys(SPLITS, 0)
    rule = ChunkRule(options.docs_per_chunk)
    written: list[str] = []
    tick = reporter.phase("read", None, "docs")

    def flush() -> None:
        table = pa.table(
            {
                "id": arrow.strings([d.id for d in chunk]),
                "text": arrow.strings([None if d.sentences is not None else d.text for d in chunk]),
                "sentences": arrow.string_lists([d.sentences for d in chunk]),
                "validation": arrow.from_numpy(np.array(validation, dtype=bool)),
            }
        )
        path = work / "docs" / f"c{len(written):06d}.arrow"
        with atomic_path(path) as tmp, pa.ipc.new_file(tmp, table.schema, options=WORK_IPC) as f:
            f.write_table(table)
        written.append(path.relative_to(work.parent).as_posix())
        tick(None, {"documents": len(chunk)}, False)
        chunk.clear()
        validation.clear()
        rule.ended()

    for doc in iter_documents(list(args.inputs), args.read_options, read_stats):
        split = document_split(options.seed, doc.id, options.validation_fraction)
        size = len(doc.text) if doc.sentences is None else sum(map(len, doc.sentences))
        if rule.before(size):
            flush()
        counts[split] += 1
        chars[split] += size
        chunk.append(doc)
        validation.append(split == "validation")
        rule.add(size)
        if rule.after():
            flush()
    if chunk:
        flush()
    reporter.finish("read")
    return {
        "chunks": len(written),
        "chars": sum(chars.values()),  # for the tokenize stage's choice of workers (not in stats.json)
        "documents": counts,
        "split_chars": chars,  # with the documents, the number of partitions (sizes.partition_count)
        "read": read_stats.to_dict(),
        OUTPUTS_KEY: written,
    }
