"""`build-pairs`: documents -> rows of the chosen objective (NSP or SOP sentence pairs, or `none`'s rows of
pieces), partition by partition, resumable, in bounded memory.

Stages (each resumable: outputs are atomic, finished tasks leave a completion marker under `.work`):
1. read: one streaming pass over the input writes documents in chunks of `docs_per_chunk` (or CHUNK_CHARS of
   text) to `.work/docs` and counts them, which fixes the number of partitions per split.
2. tokenize, one task per chunk: split, tokenize once, assign each document to its split (`unit_interval`) and
   partition (`stable_hash`), and write one token cache per (split, partition) touched by the chunk.
3. pairs, one task per (split, partition, dupe pass): load the partition's caches and write
   `{split}/part-PPPPP-dD.parquet`. Partitions hold about `docs_per_partition` documents: the pool NotNext
   segments are drawn from (and packed rows are filled from), and what one task holds in memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpusprep.console import console
from corpusprep.engine import arrow
from corpusprep.engine.artifact import WORK, Artifact, input_files
from corpusprep.engine.executor import OUTPUTS_KEY, Executor, LocalExecutor, Task, executor_for, merge_stats
from corpusprep.engine.files import atomic_path, write_json
from corpusprep.engine.records import load_record
from corpusprep.engine.rng import rng_for, stable_hash, unit_interval
from corpusprep.errors import UsageError
from corpusprep.objectives import DEFAULT as DEFAULT_OBJECTIVE
from corpusprep.objectives import objective as objective_spec
from corpusprep.objectives.base import NO_PARTNER, NO_SENTENCES, ONE_SENTENCE  # noqa: F401  (re-exported)
from corpusprep.pair.instances import SHORT_SEQ_BY, PartitionTokens
from corpusprep.pair.schema import SPLITS
from corpusprep.pair.tokens import (
    concat_partitions,
    encode_documents,
    load_cache,
    save_cache,
    select_documents,
)
from corpusprep.read.document import no_usable_documents, skip_summary, unk_warning
from corpusprep.settings import MAX_PASSES
from corpusprep.split.stage import make_splitter
from corpusprep.tokenize import VocabInfo

STATS_VERSION = 1
log = logging.getLogger("corpusprep.pair")
OWNS = ("stats.json", "train/part-*.parquet", "validation/part-*.parquet")  # what --overwrite may remove
# A chunk (one tokenize task) ends after docs_per_chunk documents or this much text, whichever comes first:
# what a task holds is bounded by bytes (256 book-length documents would be gigabytes). Chunking never
# changes the output: partitions take their documents in input order whatever the chunks.
CHUNK_CHARS = 32 * 2**20
# One process's rates on the reference machine (2 vCPU EPYC): with default workers, a stage estimated to take
# too little for a pool to pay its start-up runs in-process (`Executor.sized`).
TOKENIZE_CHARS_PER_SECOND = 7e6  # split, tokenize, write the caches
PAIR_TOKENS_PER_SECOND = 12e6  # tokens x dupe passes: pair, write Parquet


@dataclass(frozen=True)
class PairOptions:
    """What the pairs are made of. Fields match the `build-pairs` options, so a TOML section gives
    `PairOptions(**section)`."""

    max_seq_length: int = 128
    short_seq_prob: float = 0.1
    # when the short target is drawn: "segment" (each new chunk: the share of short rows is short_seq_prob
    # whatever the document lengths) or "document" (once per document and pass, as Google's script does)
    short_seq_by: str = "segment"
    dupe_factor: int = 5
    docs_per_partition: int = 2048
    validation_fraction: float = 0.01
    seed: int = 12345
    splitter: str = "default"
    docs_per_chunk: int = 256
    language: str = "en"  # ISO 639-1: the splitter's per-language rules
    line_breaks: str = "auto"  # auto | sentence | paragraph: see corpusprep.split.linebreaks
    objective: str = DEFAULT_OBJECTIVE  # a name in corpusprep.objectives
    # none only: pack pieces of several documents into a row. None is the objective's default, and is
    # resolved on construction (True for none, False for nsp and sop), so equal settings are equal options.
    pack: bool | None = None

    def __post_init__(self) -> None:
        name = self.objective.lower() if isinstance(self.objective, str) else self.objective
        spec = objective_spec(name)  # one line naming the choices on an unknown name
        object.__setattr__(self, "objective", spec.name)
        least = spec.min_partition_docs
        checks = [
            (5 <= self.max_seq_length <= 65_535, "max_seq_length must be in [5, 65535]"),
            (0 <= self.short_seq_prob <= 1, "short_seq_prob must be in [0, 1]"),
            (
                self.short_seq_by in SHORT_SEQ_BY,
                f"short_seq_by must be {' or '.join(SHORT_SEQ_BY)}, not {self.short_seq_by!r}",
            ),
            (1 <= self.dupe_factor <= MAX_PASSES, f"dupe_factor must be in [1, {MAX_PASSES}] (BERT: 10)"),
            (self.docs_per_partition >= least, f"docs_per_partition must be at least {least} ({spec.name})"),
            (0 <= self.validation_fraction < 1, "validation_fraction must be in [0, 1)"),
            (self.docs_per_chunk >= 1, "docs_per_chunk must be at least 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise UsageError(f"build-pairs: {message}")
        for name, value in spec.resolve_options(self).items():  # pack; what rows of pieces do not use
            object.__setattr__(self, name, value)
        for name in ("splitter", "line_breaks"):  # any case, as --objective and --language take it
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, getattr(self, name).lower())
        make_splitter(self.splitter, self.language, self.line_breaks)  # fails now on a bad name or mode


def document_split(seed: int, doc_id: str, validation_fraction: float) -> str:
    return "validation" if unit_interval(seed, "split", doc_id) < validation_fraction else "train"


def document_partition(seed: int, doc_id: str, partitions: int) -> int:
    return stable_hash(seed, "partition", doc_id) % partitions


# ---------------------------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class TokenizeArgs:
    chunk: Path
    cache_dir: Path
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
    cache_dir: Path
    output: Path
    token_dtype: str
    options: PairOptions


@functools.lru_cache(maxsize=2)
def _tokenizer(path: str):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(path)


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
    """Split and tokenize one chunk of documents; write a token cache per (split, partition)."""
    args: TokenizeArgs = task.args
    opts = args.options
    table = pa.ipc.open_file(args.chunk).read_all()
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
    tokenizer = _tokenizer(str(args.tokenizer_json))
    splits = [document_split(opts.seed, doc_id, opts.validation_fraction) for doc_id in ids]
    stats: dict[str, Any] = {"partition_documents": {}}
    written: list[str] = []
    for split in SPLITS:
        members = [d for d, s in enumerate(splits) if s == split]
        with _one_thread():
            part, counts = encode_documents(
                tokenizer,
                [documents[d] for d in members],
                [ids[d] for d in members],
                sep_id=args.sep_id,
                max_tokens=opts.max_seq_length - objective_spec(opts.objective).specials,
                dtype=np.dtype(args.token_dtype),
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
            path = args.cache_dir / split / f"p{p:05d}" / f"{args.chunk.stem}.npz"
            save_cache(path, select_documents(part, docs))
            written.append(path.relative_to(args.cache_dir.parent.parent).as_posix())
            stats["partition_documents"][f"{split}/{p:05d}"] = len(docs)
    return {**stats, OUTPUTS_KEY: written}


_LOADED: dict[str, Any] = {}  # the partition this process loaded last, and what it was loaded from


def _partition(cache_dir: Path, dtype: np.dtype) -> PartitionTokens:
    """A partition's documents from its token caches. A partition's dupe passes are consecutive tasks, so
    the last one loaded is kept for the next pass (read-only: every pass sees the same arrays); one at a
    time, so what a process holds stays one partition."""
    files = sorted(cache_dir.glob("c*.npz"))
    key = (str(cache_dir), dtype.str, [(f.name, (st := f.stat()).st_size, st.st_mtime_ns) for f in files])
    if _LOADED.get("key") != key:
        _LOADED.clear()  # drop the previous partition before loading the next
        part = concat_partitions([load_cache(f) for f in files], dtype)
        for array in (part.tokens, part.sent_offsets, part.sent_index, part.doc_offsets):
            array.flags.writeable = False
        _LOADED.update(key=key, part=part)
    return _LOADED["part"]


def pair_task(task: Task) -> dict[str, Any]:
    """One dupe pass over one partition: build the pairs and write them as one Parquet file."""
    args: PairArgs = task.args
    opts = args.options
    dtype = np.dtype(args.token_dtype)
    part = _partition(args.cache_dir, dtype)
    rng = rng_for(opts.seed, "pairs", args.split, args.partition, args.dupe_pass)
    table, stats = objective_spec(opts.objective).rows(part, opts, rng, args.dupe_pass)
    with atomic_path(args.output) as tmp:
        pq.write_table(table, tmp, compression="zstd", compression_level=1)
    if args.dupe_pass > 0:  # documents are counted once, in pass 0
        del stats["documents_used"], stats["documents_skipped"]
    return {args.split: {"files": 1, **stats}}


# ---------------------------------------------------------------------------------------------- driver


def build_pairs(
    inputs: Sequence[str | Path],
    vocab_dir: Path,
    out_dir: Path,
    options: PairOptions,
    read_options,
    *,
    executor: Executor | None = None,
    workers: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Build NSP pairs from `inputs` into `out_dir`; return the stats also written to `out_dir/stats.json`.

    Same inputs, vocab, options and seed give the same files whatever the executor (engine, `workers`: a
    local pool's shorthand) is. The output
    directory is an artifact (`engine.artifact`): an interrupted run resumes, a damaged one is repaired, a
    finished one with the same inputs and settings is left as it is.
    """
    from corpusprep.read import resolve_inputs

    started = time.perf_counter()
    executor = executor_for(executor, workers)
    resolve_inputs(inputs)  # a typo fails before the output dir exists
    vocab = VocabInfo.verified(vocab_dir)
    tokenizer_json = vocab.tokenizer_json()
    _tokenizer(str(tokenizer_json))  # fail now, not in a worker (and the in-process tasks reuse it)
    out_dir = Path(out_dir)
    identity = {
        "stats_version": STATS_VERSION,
        "inputs": {"files": input_files(inputs, out_dir)},
        "read_options": _as_dict(read_options),
        "options": dataclasses.asdict(options),
        "vocab_sha256": vocab.sha256,
    }
    artifact = Artifact(
        out_dir, "pairs", identity, owns=OWNS, inputs=[*inputs, vocab_dir], overwrite=overwrite,
        command="build-pairs"
    )
    with artifact, _Progress(progress) as bar:
        if artifact.complete is not None:
            return {**load_record(out_dir / "stats.json", "pairs_stats"), "nothing_to_do": True}
        work = out_dir / WORK
        read_task = Task("read", ReadArgs(tuple(map(str, inputs)), read_options, options, work))
        # in this process whatever the engine: the read stage drives the progress bar
        (read,) = artifact.run(functools.partial(read_stage, bar=bar), [read_task], LocalExecutor(1),
                               stats_kind="read_task")  # fmt: skip
        if not any(read["documents"].values()):
            shutil.rmtree(work)  # nothing to resume: a rerun with other read options starts clean
            raise no_usable_documents(inputs, read["read"])
        partitions = {
            split: max(1, math.ceil(read["documents"][split] / options.docs_per_partition))
            for split in SPLITS
        }
        token_tasks = [
            Task(
                f"tokens-{c:06d}",
                TokenizeArgs(
                    work / "docs" / f"c{c:06d}.arrow",
                    work / "tokens",
                    tokenizer_json,
                    vocab.sep_id,
                    vocab.token_dtype.str,
                    options,
                    partitions,
                ),
            )
            for c in range(read["chunks"])
        ]
        on_done = bar.stage(
            "tokenize", len(token_tasks), lambda s: sum(s[x]["documents"] for x in SPLITS), "docs"
        )
        seconds = read.get("chars", math.inf) / TOKENIZE_CHARS_PER_SECOND  # a resumed read may lack chars
        token_stats = merge_stats(artifact.run(tokenize_task, token_tasks, executor.sized(seconds),
                                               on_done=on_done, stats_kind="tokens_task"))  # fmt: skip

        docs_in = token_stats.get("partition_documents", {})  # absent when no document has a sentence
        tokens = {k: sum(token_stats.get(s, {}).get(k, 0) for s in SPLITS) for k in ("tokens", "unk_tokens")}
        if warning := unk_warning(tokens["unk_tokens"], tokens["tokens"], str(out_dir)):
            log.warning(warning)
        usable = {
            split: sum(n for key, n in docs_in.items() if key.startswith(f"{split}/")) for split in SPLITS
        }
        if not docs_in:
            shutil.rmtree(work)
            no_sentences = {NO_SENTENCES: sum(token_stats.get(s, {}).get("skipped", {}).get(NO_SENTENCES, 0)
                                              for s in SPLITS)}
            raise no_usable_documents(inputs, read["read"], no_sentences)
        where = ", ".join(map(str, inputs))
        spec = objective_spec(options.objective)
        spec.check_corpus(token_stats, usable["train"], where, skip_summary(read["read"]))
        pair_tasks = [
            Task(
                f"pairs-{split}-{p:05d}-d{d}",
                PairArgs(
                    split,
                    p,
                    d,
                    work / "tokens" / split / f"p{p:05d}",
                    out_dir / split / f"part-{p:05d}-d{d}.parquet",
                    vocab.token_dtype.str,
                    options,
                ),
                outputs=(f"{split}/part-{p:05d}-d{d}.parquet",),
            )
            for split in SPLITS
            for p in range(partitions[split])
            if docs_in.get(f"{split}/{p:05d}", 0) >= spec.min_partition_docs
            for d in range(options.dupe_factor)
        ]
        on_done = bar.stage("pairs", len(pair_tasks), lambda s: sum(v["pairs"] for v in s.values()), "pairs")
        work = options.dupe_factor * sum(token_stats.get(split, {}).get("tokens", 0) for split in SPLITS)
        pairing = executor.sized(work / PAIR_TOKENS_PER_SECOND)
        pair_stats = merge_stats(artifact.run(pair_task, pair_tasks, pairing, on_done=on_done,
                                              stats_kind="pairs_task"))  # fmt: skip

        stats = _assemble_stats(read, token_stats, pair_stats, partitions, identity, vocab, options)
        if warning := imbalance_warning(stats, str(out_dir)):
            log.warning(warning)
        write_json(out_dir / "stats.json", stats)  # no run time in it: the same inputs give the same bytes
        artifact.commit(files=["stats.json"])
    return {**stats, "seconds": round(time.perf_counter() - started, 3)}


def imbalance_warning(stats: dict[str, Any], where: str) -> str | None:
    """The objective's warning on finished pairs stats (nsp: its 50/50 is off), if any."""
    return objective_spec(stats.get("objective")).warning(stats, where)


def _as_dict(options) -> dict[str, Any]:
    return dataclasses.asdict(options) if dataclasses.is_dataclass(options) else dict(vars(options))


@dataclass(frozen=True)
class ReadArgs:
    inputs: tuple[str, ...]
    read_options: Any
    options: PairOptions
    work: Path


def read_stage(task: Task, bar: _Progress) -> dict[str, Any]:
    """Stream the documents once into chunk files, counting them per split (that fixes the partitions)."""
    from corpusprep.read import ReadStats, iter_documents

    args: ReadArgs = task.args
    options, work = args.options, args.work
    read_stats = ReadStats()
    counts = dict.fromkeys(SPLITS, 0)
    chunk: list = []
    written: list[str] = []
    tick = bar.stage("read", None, None, "docs")

    def flush() -> None:
        table = pa.table(
            {
                "id": arrow.strings([d.id for d in chunk]),
                "text": arrow.strings([None if d.sentences is not None else d.text for d in chunk]),
                "sentences": arrow.string_lists([d.sentences for d in chunk]),
            }
        )
        path = work / "docs" / f"c{len(written):06d}.arrow"
        with atomic_path(path) as tmp, pa.ipc.new_file(tmp, table.schema) as f:
            f.write_table(table)
        written.append(path.relative_to(work.parent).as_posix())
        tick(None, {"documents": len(chunk)}, False)
        chunk.clear()

    size = chars = 0
    for doc in iter_documents(list(args.inputs), args.read_options, read_stats):
        counts[document_split(options.seed, doc.id, options.validation_fraction)] += 1
        chunk.append(doc)
        size += len(doc.text) if doc.sentences is None else sum(map(len, doc.sentences))
        if len(chunk) == options.docs_per_chunk or size >= CHUNK_CHARS:
            flush()
            chars += size
            size = 0
    if chunk:
        flush()
    bar.finish("read")
    return {
        "chunks": len(written),
        "chars": chars + size,  # for the tokenize stage's choice of workers (not in stats.json)
        "documents": counts,
        "read": read_stats.to_dict(),
        OUTPUTS_KEY: written,
    }


def _assemble_stats(
    read, token_stats, pair_stats, partitions, identity, vocab: VocabInfo, options: PairOptions
) -> dict[str, Any]:
    spec = objective_spec(options.objective)
    splits = {}
    for split in SPLITS:
        tok, pairs = token_stats.get(split, {}), dict(pair_stats.get(split, {}))
        imbalance = pairs.pop("file_imbalance", [])
        documents = read["documents"][split]
        used = pairs.pop("documents_used", 0)
        skipped = {NO_SENTENCES: tok.get("skipped", {}).get(NO_SENTENCES, 0)}
        skipped |= pairs.get("documents_skipped", {})  # sop: one-sentence documents
        skipped = spec.skipped(documents, used, skipped)
        splits[split] = {
            "documents": documents,
            "documents_used": used,
            "documents_skipped": skipped,
            "partitions": partitions[split],
            **{
                k: tok.get(k, 0)
                for k in (
                    "sentences",
                    "empty_sentences",
                    "tokens",
                    "sentences_truncated",
                    "sentence_tokens_truncated",
                )
            },
            **{k: pairs.get(k, 0) for k in ("files", "pairs", *spec.row_counts)},
        }
        spec.finish_split(splits[split], imbalance, options.max_seq_length)
    total = merge_stats(splits.values())
    stats = {
        "stats_version": STATS_VERSION,
        "identity": identity,
        "options": identity["options"],
        "objective": spec.name,
        "vocab": {"sha256": vocab.sha256, "size": vocab.size, "directory": str(vocab.directory)},
        "read": read["read"],
        "documents": total["documents"],
        "documents_used": total["documents_used"],
        "documents_skipped": total["documents_skipped"],
        "pairs": total["pairs"],
        **{k: total[k] for k in spec.totals},
    }
    spec.finish_totals(stats, total, options.max_seq_length)
    return {**stats, "splits": splits}


class _Progress:
    """Rich progress on stderr: one line per stage with its rate (documents/s, pairs/s)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bars: dict[str, Any] = {}
        if not enabled:  # --no-progress: rich is not even imported (~0.03 CPU-s)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("{task.description:<9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[items]}"),
            TimeElapsedColumn(),
            console=console(),
            transient=False,
        )

    def __enter__(self) -> _Progress:
        if self.enabled:
            self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.progress.__exit__(*exc)

    def stage(self, name: str, total: int | None, count: Callable | None, unit: str) -> Callable:
        """An `on_done(task, stats, skipped)` callback: advance this stage, show items and items/s."""
        if not self.enabled:
            return lambda task, stats, skipped: None
        bar = self.bars[name] = self.progress.add_task(name, total=total, items="")
        start, items = time.perf_counter(), 0

        def on_done(task, stats, skipped) -> None:
            nonlocal items
            items += stats["documents"] if count is None else count(stats)
            rate = items / max(time.perf_counter() - start, 1e-9)
            self.progress.update(bar, advance=1, items=f"{items:,} {unit}  {rate:,.0f} {unit}/s")

        return on_done

    def finish(self, name: str) -> None:
        """Mark a stage of unknown length as complete (stops its clock)."""
        if not self.enabled:
            return
        bar = self.bars[name]
        done = next(t.completed for t in self.progress.tasks if t.id == bar)
        self.progress.update(bar, total=done, completed=done)
