"""`build-pairs`: documents -> rows of the chosen objective (NSP or SOP sentence pairs, or `none`'s rows of
pieces), partition by partition, resumable, in bounded memory.

Stages (each resumable: outputs are atomic, finished tasks leave a completion marker under `.work`):
1. read: one streaming pass over the input writes documents in chunks (`sizes.ChunkRule`: by bytes of text) to
   `.work/docs` and counts them and their characters, which fixes the number of partitions per split
   (`sizes.partition_count`).
2. tokenize, one task per chunk: split, tokenize once, assign each document to its split (`unit_interval`) and
   partition (`stable_hash`), and write the chunk's tokens to one file, a batch per (split, partition).
3. pairs, one task per (split, partition, dupe pass): read the partition's batch of each chunk and write
   `{split}/part-PPPPP-dD.parquet`. Partitions hold about `docs_per_partition` documents (within the bounds of
   `sizes`): the pool NotNext segments are drawn from (and packed rows are filled from), and what one task
   holds in memory.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.executor import Task, merge_stats
from corpusprep.engine.files import write_json
from corpusprep.engine.records import COUNT, Obj, RecordError, load_record
from corpusprep.engine.stage import RunContext, StageRun, stage_run
from corpusprep.errors import DataError
from corpusprep.objectives import objective as objective_spec
from corpusprep.objectives.base import NO_PARTNER, NO_SENTENCES, ONE_SENTENCE  # noqa: F401  (re-exported)
from corpusprep.pair.options import PairOptions
from corpusprep.pair.schema import SPLITS
from corpusprep.pair.sizes import partition_count
from corpusprep.pair.stats import STATS_VERSION, assemble_stats, imbalance_warning, loss_warnings
from corpusprep.pair.tasks import (  # noqa: F401  (document_split, document_partition: re-exported)
    PairArgs,
    ReadArgs,
    TokenizeArgs,
    document_partition,
    document_split,
    load_tokenizer,
    pair_task,
    partition_name,
    read_stage,
    tokenize_task,
)
from corpusprep.read import resolve_inputs
from corpusprep.read.document import no_usable_documents, skip_summary, unk_warning
from corpusprep.read.inputs import input_files
from corpusprep.tokenize import VocabInfo

__all__ = ["PairOptions", "build_pairs", "document_partition", "document_split", "imbalance_warning"]

log = logging.getLogger("corpusprep.pair")
# One process's rates on the reference machine (2 vCPU EPYC): with default workers, a stage estimated to take
# too little for a pool to pay its start-up runs in-process (`Executor.sized`).
TOKENIZE_CHARS_PER_SECOND = 7e6  # split, tokenize, write the caches
PAIR_TOKENS_PER_SECOND = 12e6  # tokens x dupe passes: pair, write Parquet


def build_pairs(
    inputs: Sequence[str | Path],
    vocab_dir: Path,
    out_dir: Path,
    options: PairOptions,
    read_options,
    *,
    context: RunContext | None = None,
) -> dict[str, Any]:
    """Build the objective's rows from `inputs` into `out_dir`; return the stats also written to
    `out_dir/stats.json`.

    Same inputs, vocab, options and seed give the same files whatever the `context`'s executor (engine,
    workers) is. The output directory is an artifact (`engine.artifact`): an interrupted run resumes, a
    damaged one is repaired, a finished one with the same inputs and settings is left as it is.
    """
    started = time.perf_counter()
    resolve_inputs(inputs)  # a typo fails before the output dir exists
    vocab = VocabInfo.verified(vocab_dir)
    load_tokenizer(str(vocab.tokenizer_json()))  # fail now, not in a worker (in-process tasks reuse it)
    out_dir = Path(out_dir)
    identity = pairs_identity(inputs, out_dir, read_options, options, vocab)
    with stage_run(out_dir, "pairs", identity, inputs=[*inputs, vocab_dir], context=context,
                   command="build-pairs") as run:
        if run.complete is not None:
            return {**load_record(out_dir / "stats.json", "pairs_stats"), "nothing_to_do": True}
        read_task = Task("read", ReadArgs(tuple(map(str, inputs)), read_options, options, run.work))
        # in this process whatever the engine: the read stage drives its progress bar itself
        (read,) = run.phase("read", functools.partial(read_stage, reporter=run.reporter), [read_task],
                            unit="docs", local=True, stats_kind="read_task")
        if not any(read["documents"].values()):
            storage.remove_tree(run.work)  # nothing to resume: a rerun with other read options starts clean
            raise no_usable_documents(inputs, read["read"])
        partitions = plan_partitions(read, options, run)
        chunk_stats = run.phase(
            "tokenize", tokenize_task, token_tasks(run, read["chunks"], vocab, options, partitions),
            unit="docs", count=lambda s: sum(s[x]["documents"] for x in SPLITS), stats_kind="tokens_task",
            seconds=read.get("chars", math.inf) / TOKENIZE_CHARS_PER_SECOND)  # a resumed read may lack chars
        token_stats = merge_stats(chunk_stats)
        check_tokens(token_stats, read, inputs, run, options)
        tokens = options.dupe_factor * sum(token_stats.get(split, {}).get("tokens", 0) for split in SPLITS)
        sources = partition_sources(run, chunk_stats, partitions)
        pair_stats = merge_stats(run.phase(
            "pairs", pair_task, pair_tasks(out_dir, sources, partitions, vocab, options),
            unit="pairs", count=lambda s: sum(v["pairs"] for v in s.values()), stats_kind="pairs_task",
            seconds=tokens / PAIR_TOKENS_PER_SECOND))
        stats = assemble_stats(read, token_stats, pair_stats, partitions, identity, vocab, options)
        for warning in (imbalance_warning(stats, str(out_dir)), *loss_warnings(stats, str(out_dir))):
            if warning:
                log.warning(warning)
        write_json(out_dir / "stats.json", stats)  # no run time in it: the same inputs give the same bytes
        run.commit(files=["stats.json"])
    return {**stats, "seconds": round(time.perf_counter() - started, 3)}


def pairs_identity(inputs, out_dir: Path, read_options, options: PairOptions, vocab: VocabInfo) -> dict:
    """Everything a pairs directory's bytes depend on (its artifact's identity)."""
    return {
        "stats_version": STATS_VERSION,
        "inputs": {"files": input_files(inputs, out_dir)},
        "read_options": _as_dict(read_options),
        "options": dataclasses.asdict(options),
        "vocab_sha256": vocab.sha256,
    }


# What the read stage counts beyond pair.schemas.READ_TASK's fields, checked here before it steers the
# partitions (a marker of an unfinished build by an earlier version lacks it).
SPLIT_CHARS = Obj({"split_chars": Obj({split: COUNT for split in SPLITS})})


def plan_partitions(read: dict, options: PairOptions, run: StageRun) -> dict[str, int]:
    """The number of partitions of each split, from its documents and characters (`sizes.partition_count`)."""
    try:
        SPLIT_CHARS.check(read, "")
    except RecordError as error:
        raise DataError(f"{run.work / 'markers'}: the read task's record: {error} (an unfinished build of an "
                        "earlier version?); pass --overwrite to rebuild") from None
    return {split: partition_count(read["documents"][split], read["split_chars"][split],
                                   options.docs_per_partition) for split in SPLITS}


def token_tasks(run: StageRun, chunks: int, vocab: VocabInfo, options: PairOptions,
                partitions: dict[str, int]) -> list[Task]:
    """One tokenize task per chunk of documents the read stage wrote."""
    tokenizer = vocab.tokenizer_json()
    return [
        Task(f"tokens-{c:06d}", TokenizeArgs(run.work / "docs" / f"c{c:06d}.arrow",
                                             run.work / "tokens" / f"c{c:06d}.arrow",
                                             tokenizer, vocab.sep_id, vocab.token_dtype.str, options,
                                             partitions))
        for c in range(chunks)
    ]


def check_tokens(token_stats: dict, read: dict, inputs, run: StageRun, options: PairOptions) -> None:
    """Warn on many [UNK]s; refuse a corpus without a usable document, or one the objective cannot use."""
    tokens = {k: sum(token_stats.get(s, {}).get(k, 0) for s in SPLITS) for k in ("tokens", "unk_tokens")}
    if warning := unk_warning(tokens["unk_tokens"], tokens["tokens"], str(run.artifact.directory)):
        log.warning(warning)
    docs_in = token_stats.get("partition_documents", {})  # absent when no document has a sentence
    if not docs_in:
        storage.remove_tree(run.work)
        no_sentences = {NO_SENTENCES: sum(token_stats.get(s, {}).get("skipped", {}).get(NO_SENTENCES, 0)
                                          for s in SPLITS)}
        raise no_usable_documents(inputs, read["read"], no_sentences)
    usable_train = sum(n for key, n in docs_in.items() if key.startswith("train/"))
    objective_spec(options.objective).check_corpus(token_stats, usable_train, ", ".join(map(str, inputs)),
                                                   skip_summary(read["read"]))


def partition_sources(run: StageRun, chunk_stats: Sequence[dict], partitions: dict[str, int]
                      ) -> dict[str, list[tuple[Path, int, int]]]:
    """For each partition, (token file, batch index, documents) of every chunk holding some of its documents:
    a chunk's token file holds a batch per partition it touches, in (split, partition) order."""
    known = {partition_name(split, p): (s, p) for s, split in enumerate(SPLITS)
             for p in range(partitions[split])}
    sources: dict[str, list[tuple[Path, int, int]]] = {}
    for c, stats in enumerate(chunk_stats):
        names = stats["partition_documents"]
        if unknown := sorted(set(names) - set(known)):
            raise DataError(f"{run.work / 'markers'}: tokens-{c:06d}: no partition {unknown[0]!r} of "
                            f"{partitions} (a task marker corpusprep did not write?); pass --overwrite")
        for index, name in enumerate(sorted(names, key=known.__getitem__)):
            sources.setdefault(name, []).append((run.work / "tokens" / f"c{c:06d}.arrow", index, names[name]))
    return sources


def pair_tasks(out_dir: Path, sources: dict[str, list], partitions: dict[str, int], vocab: VocabInfo,
               options: PairOptions) -> list[Task]:
    """One task per (split, partition, dupe pass) of a partition with enough documents for the objective."""
    least = objective_spec(options.objective).min_partition_docs
    return [
        Task(f"pairs-{split}-{p:05d}-d{d}",
             PairArgs(split, p, d, tuple(sources[partition_name(split, p)]),
                      out_dir / split / f"part-{p:05d}-d{d}.parquet", vocab.token_dtype.str, options),
             outputs=(f"{split}/part-{p:05d}-d{d}.parquet",))
        for split in SPLITS
        for p in range(partitions[split])
        if sum(n for _, _, n in sources.get(partition_name(split, p), ())) >= least
        for d in range(options.dupe_factor)
    ]


def _as_dict(options) -> dict[str, Any]:
    return dataclasses.asdict(options) if dataclasses.is_dataclass(options) else dict(vars(options))
