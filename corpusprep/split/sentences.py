"""The `sentences` stage's driver: documents -> sentences in one file (text or Parquet) with its record.

    report = run_sentences(["corpus/"], Path("sentences.txt"), SentencesOptions(language="de"), ReadOptions())

A sentences output is one file, not an artifact directory: how it was built (its identity: the inputs'
fingerprints and the options) is recorded beside it (`split.stage.record_path`), so a rerun of the same
command finds it up to date, and a rerun with other inputs or options says what changed and refuses (or,
with its context's `overwrite`, replaces it). `out` None writes standard output: no record, never "up to
date".
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from corpusprep.console import console, write_stdout
from corpusprep.engine import storage
from corpusprep.engine.files import remove_stale_temps_of, write_json
from corpusprep.engine.manifest import describe_changes
from corpusprep.engine.progress import Reporter, Tick
from corpusprep.engine.stage import RunContext
from corpusprep.errors import UsageError, printable
from corpusprep.read import ReadOptions, ReadStats, iter_documents
from corpusprep.read.document import no_usable_documents
from corpusprep.read.inputs import input_files
from corpusprep.split import SentencesOptions, make_splitter
from corpusprep.split.stage import (
    SentenceStats,
    read_output_record,
    record_path,
    split_documents,
    write_output_record,
    write_parquet,
    write_sentences,
    write_text,
)

PROGRESS_EVERY = 256  # documents between progress refreshes: a refresh costs more than splitting one


def sentences_identity(inputs: Sequence[str], options: SentencesOptions, read: ReadOptions) -> dict:
    """What the output's bytes depend on: the inputs (path, size, mtime) and the options."""
    return {"kind": "sentences", "inputs": {"files": input_files(inputs)},
            "options": {"format": options.format, "splitter": options.splitter, "language": options.language,
                        "line_breaks": options.line_breaks, "input_format": read.format,
                        "text_field": read.text_field, "on_error": read.on_error,
                        "max_document_mb": read.max_document_mb, "document_per_file": read.document_per_file}}


def run_sentences(
    inputs: Sequence[str],
    out: Path | None,
    options: SentencesOptions,
    read_options: ReadOptions,
    *,
    stats_file: Path | None = None,
    context: RunContext | None = None,
) -> dict[str, Any] | None:
    """Split the documents of `inputs` into `out` (None: standard output); return the report (also written
    to `stats_file`), or None when nothing was written: up to date (said on stderr), or the reader of
    standard output went away. In this process: of `context`, only overwrite and progress apply."""
    context = context or RunContext()
    split = make_splitter(options.splitter, options.language, options.line_breaks)
    identity = sentences_identity(inputs, options, read_options)
    for path in (out, out and record_path(out), stats_file):
        if path is not None:
            remove_stale_temps_of(path)
    if out is not None and storage.exists(out) and not context.overwrite:
        return _reuse(out, identity, stats_file)
    if out is not None:
        storage.remove(record_path(out), missing_ok=True)  # the file it described is about to be replaced
    read_stats, split_stats = ReadStats(), SentenceStats()
    documents = iter_documents(inputs, read_options, read_stats)  # resolves inputs now: bad paths fail early
    start = time.perf_counter()
    with Reporter(context.progress, transient=True) as reporter:
        rows = _tracked(split_documents(documents, split, split_stats), reporter.stream("splitting"),
                        read_stats, split_stats, inputs)
        if out is None:
            if not write_stdout(lambda stream: write_sentences(stream, rows)):
                return None  # the reader stopped reading (`| head`): nothing more to say
        else:
            (write_parquet if options.format == "parquet" else write_text)(out, rows)
    report = {"output": printable(storage.url(out)) if out else "standard output", "format": options.format,
              "splitter": options.splitter, "language": options.language, "line_breaks": options.line_breaks,
              "seconds": round(time.perf_counter() - start, 3),
              "read": read_stats.to_dict(), "split": split_stats.to_dict()}
    if out is not None:
        write_output_record(out, identity, report)
    if stats_file is not None:
        write_json(stats_file, report)
    return report


def _reuse(out: Path, identity: dict, stats_file: Path | None) -> None:
    """An existing `out`: up to date when its record says it was built with `identity`; else refused."""
    record = read_output_record(out)
    if record is None:
        raise UsageError(f"{out}: already exists; pass --overwrite to replace it")
    changes = "; ".join(describe_changes(record["identity"], identity)[:3])
    if changes:
        raise UsageError(f"{out}: holds sentences built from other inputs or options ({changes}); pass "
                         "--overwrite to replace it, or pick another file")
    if stats_file is not None and isinstance(record.get("report"), dict):
        write_json(stats_file, record["report"])
    console().print(f"{printable(str(out))}: up to date (same inputs and options); pass --overwrite to "
                    "rebuild")


def _tracked(
    rows: Iterable[tuple[str, list[str]]], tick: Tick, read_stats: ReadStats, split_stats: SentenceStats,
    inputs: Sequence[str],
) -> Iterator[tuple[str, list[str]]]:
    """`rows`, ticking the progress line; no sentence at all fails inside the write, so the empty output
    is removed, never renamed into place."""
    for n, item in enumerate(rows, 1):
        if n % PROGRESS_EVERY == 0:
            tick(n, read_stats.bytes, f"{split_stats.sentences:>12,} sentences")
        yield item
    if split_stats.used == 0:
        raise no_usable_documents(inputs, read_stats.to_dict(), dict(split_stats.skipped))
