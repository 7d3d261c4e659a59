"""`corpusprep curate`: documents -> the documents worth keeping, and a record of every one removed.

Phases (each resumable: outputs are atomic, finished tasks leave a marker under `.work`):
1. read: one streaming pass writes the documents in chunks (chunks.py).
2. evaluation (with --decontaminate): the evaluation files' n-gram index (contamination.py).
3. analyse, a task per chunk: decontamination, language, quality filters; the survivors' keys (analyse.py).
4. pairs, a task per (band, bucket) and per exact bucket: duplicate pairs, verified (dedup.py).
5. cluster, in this process: the pairs' clusters; each keeps its first document (dedup.py).
6. lines (with --lines), a task per bucket: lines repeated across kept documents.
7. write, a task per chunk: `kept/part-*.jsonl|parquet` and the removed records (write.py).
Then `removed.jsonl`, `curate.json` (the counts) and `report.md` + `report.png` (report.py), and the manifest.
The same inputs and options give the same bytes whatever the engine or the number of workers.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from corpusprep.curate import dedup
from corpusprep.curate.analyse import AnalyseArgs, analyse_task
from corpusprep.curate.chunks import ReadArgs, read_ipc, read_stage, write_ipc
from corpusprep.curate.contamination import EvalIndex
from corpusprep.curate.evalsets import read_examples
from corpusprep.curate.options import CurateOptions
from corpusprep.curate.report import write_report
from corpusprep.curate.write import WriteArgs, removed_part, write_task
from corpusprep.engine import storage
from corpusprep.engine.executor import Task, merge_stats
from corpusprep.engine.files import write_json
from corpusprep.engine.records import load_record
from corpusprep.engine.stage import RunContext, StageRun, stage_run
from corpusprep.read import resolve_inputs
from corpusprep.read.document import no_usable_documents
from corpusprep.read.inputs import input_files
from trainer.evaluate.data import Skips

STATS_VERSION = 1
ANALYSE_CHARS_PER_SECOND = 4e6  # one process on the reference machine: dedup and language identification
SUMMARY_FILES = ("removed.jsonl", "curate.json", "report.md", "report.png")


def curate(
    inputs: Sequence[str | Path],
    out_dir: Path,
    options: CurateOptions,
    read_options,
    *,
    context: RunContext | None = None,
) -> dict[str, Any]:
    """Curate `inputs` into `out_dir` as `context` says; return the counts also written to
    `out_dir/curate.json`."""
    started = time.perf_counter()
    resolve_inputs(inputs)  # a typo fails before the output dir exists
    eval_files = [str(p) for p in options.decontaminate]
    for path in eval_files:
        if not storage.is_file(Path(path)):
            read_examples(path)  # one line naming it
    if options.languages:
        _check_languages(options.languages)
    out_dir = Path(out_dir)
    identity = curate_identity(inputs, out_dir, read_options, options)
    with stage_run(out_dir, "curate", identity, inputs=[*inputs, *eval_files], context=context,
                   command="curate") as run:
        if run.complete is not None:
            return {**load_record(out_dir / "curate.json", "curate_stats"), "nothing_to_do": True}
        stats = _phases(run, inputs, out_dir, options, read_options)
        stats["identity"] = identity
        write_json(out_dir / "curate.json", stats)
        write_report(out_dir, stats)
        run.commit(files=SUMMARY_FILES)
    return {**stats, "seconds": round(time.perf_counter() - started, 3)}


def curate_identity(inputs, out_dir: Path, read_options, options: CurateOptions) -> dict:
    """Everything the output's bytes depend on (its artifact's identity)."""
    evaluation = [[storage.url(Path(p)), (st := storage.stat(Path(p))).st_size, st.st_mtime_ns]
                  for p in options.decontaminate]
    return {"stats_version": STATS_VERSION, "inputs": {"files": input_files(inputs, out_dir)},
            "evaluation_files": evaluation, "read_options": dataclasses.asdict(read_options),
            "options": dataclasses.asdict(options)}


def _check_languages(languages: tuple[str, ...]) -> None:
    from corpusprep.curate.language import known_languages
    from corpusprep.errors import UsageError

    known = known_languages()
    unknown = [x for x in languages if x not in known]
    if unknown:
        raise UsageError(f"--languages {','.join(unknown)}: not a language the identifier knows (it knows "
                         f"{len(known)}: {', '.join(known[:12])}, ...)")


def _phases(run: StageRun, inputs, out_dir: Path, options: CurateOptions, read_options) -> dict[str, Any]:
    work = run.work
    index, examples, evaluation = _evaluation(run, options, read_options.on_error)  # first: fails at once
    read_task = Task("read", ReadArgs(tuple(map(str, inputs)), read_options, options, work))
    (read,) = run.phase("read", functools.partial(read_stage, reporter=run.reporter), [read_task],
                        unit="docs", local=True, stats_kind="curate_read_task")
    if not read["documents"]:
        storage.remove_tree(work)
        raise no_usable_documents(inputs, read["read"])
    starts, chunks, documents = tuple(read["starts"]), read["chunks"], read["documents"]
    seconds = read.get("chars", math.inf) / ANALYSE_CHARS_PER_SECOND
    analysed = merge_stats(run.phase("analyse", analyse_task, [
        Task(f"analyse-{c:06d}", AnalyseArgs(c, starts[c], work, options, index)) for c in range(chunks)],
        unit="chunks", seconds=seconds))
    # a document's band key and number (16 bytes), and its signature when it is a candidate
    buckets = dedup.bucket_count(documents, 16 + 4 * options.permutations)
    pair_stats = _dedup(run, options, starts, chunks, buckets, documents)
    line_buckets = _lines(run, options, starts, chunks, dedup.bucket_count(analysed["line_keys"], 16))
    written = merge_stats(run.phase("write", write_task, [
        Task(f"write-{c:06d}", WriteArgs(c, starts, work, out_dir, options, examples, line_buckets))
        for c in range(chunks)], unit="docs", count=lambda s: s["documents"], seconds=seconds / 4))
    _join_removed(work, out_dir, chunks)
    if evaluation:
        found = sorted(set(written.get("found", [])))
        table = read_ipc(examples).take(found).to_pylist() if found else []
        evaluation = {**evaluation, "found": len(found), "found_examples": table}
    return _summary(read, written, pair_stats, evaluation, options, buckets)


def _evaluation(run: StageRun, options: CurateOptions,
                on_error: str) -> tuple[Path | None, Path | None, dict]:
    """The evaluation n-gram index and examples table (with --decontaminate), built in this process; the
    files read under the corpus's `--on-error` (evalsets.read_examples)."""
    if not options.decontaminate:
        return None, None, {}
    index, table = run.work / "evaluation" / "index.npz", run.work / "evaluation" / "examples.arrow"
    task = Task("evaluation", (options, on_error, index, table),
                outputs=tuple(p.relative_to(run.work.parent).as_posix() for p in (index, table)))
    (stats,) = run.phase("evaluation", evaluation_task, [task], unit="files", local=True)
    return index, table, stats


def evaluation_task(task: Task) -> dict[str, Any]:
    options, on_error, index_path, table_path = task.args
    skips = Skips()
    examples = [e for path in options.decontaminate for e in read_examples(path, on_error, skips)]
    index = EvalIndex.build(examples, options.ngram, options.min_example_words)
    index.save(index_path)
    write_ipc(table_path, pa.table({"file": [e.file for e in examples],
                                    "position": [e.position for e in examples],
                                    "text": [e.text for e in examples]}))
    left_out = {"skipped": skips.to_dict()} if skips.counts else {}  # --on-error skip
    return {"examples": len(examples), "too_short": index.too_short, **left_out}


def _dedup(run: StageRun, options: CurateOptions, starts, chunks: int, buckets: int,
           documents: int) -> dict[str, Any]:
    if not options.deduplicates:
        return {}
    kinds = [("exact", 0)] * options.exact + [("near", b) for b in range(options.bands)] * options.near
    tasks = [Task(f"{kind}-b{band:03d}-k{k:05d}",
                  dedup.PairArgs(kind, band, k, buckets, run.work, chunks, starts, options.threshold),
                  outputs=(_relative(run, dedup.pairs_path(run.work, kind, band, k)),))
             for kind, band in kinds for k in range(buckets)]
    stats = merge_stats(run.phase("pairs", dedup.pairs_task, tasks, unit="bands"))
    decisions = dedup.decisions_path(run.work)
    cluster = Task("cluster", (run.work, documents, options.bands, buckets, options.near, options.exact),
                   outputs=(_relative(run, decisions),))
    (clusters,) = run.phase("cluster", cluster_task, [cluster], unit="clusters", local=True)
    return {**stats, **clusters}


def _relative(run: StageRun, path: Path) -> str:
    return path.relative_to(run.work.parent).as_posix()


def cluster_task(task: Task) -> dict[str, Any]:
    return dedup.cluster(*task.args)


def _lines(run: StageRun, options: CurateOptions, starts, chunks: int, buckets: int) -> int:
    if not options.lines:
        return 0
    decisions = dedup.decisions_path(run.work) if options.deduplicates else None
    tasks = [Task(f"lines-k{k:05d}", dedup.PairArgs("lines", 0, k, buckets, run.work, chunks, starts,
                                                    options.threshold, decisions),
                  outputs=(_relative(run, dedup.pairs_path(run.work, "lines", 0, k)),))
             for k in range(buckets)]
    run.phase("lines", dedup.pairs_task, tasks, unit="buckets")
    return buckets


def _join_removed(work: Path, out_dir: Path, chunks: int) -> None:
    """`removed.jsonl`: the chunks' removed records in reading order, streamed."""
    with storage.atomic_open(out_dir / "removed.jsonl", "wb") as out:
        for chunk in range(chunks):
            with storage.open_file(removed_part(work, chunk), "rb") as part:
                while block := part.read(1 << 20):
                    out.write(block)


def _summary(read: dict, written: dict, pairs: dict, evaluation: dict, options: CurateOptions,
             buckets: int) -> dict[str, Any]:
    return {
        "stats_version": STATS_VERSION,
        "documents": written["documents"], "kept": written["kept"], "removed": written["removed"],
        "characters": written["characters"], "languages": written["languages"],
        "paragraphs_removed": written["paragraphs_removed"],
        "examples": {reason: shown[:5] for reason, shown in sorted(written["examples"].items())},
        "duplicates": {**pairs, "buckets": buckets} if options.deduplicates else {},
        "evaluation": evaluation,
        "read": read["read"], "options": dataclasses.asdict(options),
    }
