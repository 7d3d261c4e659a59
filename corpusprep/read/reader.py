"""`iter_documents`: resolve the inputs, open each file, parse it, and apply the on-error policy.

Per-document problems (bad JSONL line, missing/null text) are skipped under auto and skip, fatal under fail.
Whole-file problems (cannot open, truncated/corrupt stream, Parquet without the text column) are fatal under
auto and fail, a skipped file under skip; documents already yielded from that file stay yielded.
A binary file is skipped (fatal under fail); empty files (also whitespace only, or a Parquet file without
rows), wiki files without a <doc> block and empty documents are always skipped; a directory holding a model
or a corpusprep output is passed over. A document longer than the size bound is read as parts.
Every skip is counted in ReadStats by reason with an example naming the file and position."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from itertools import chain
from pathlib import Path

from corpusprep.engine import storage
from corpusprep.engine.records import CONTROL
from corpusprep.errors import DataError, InputError
from corpusprep.read.document import FORMAT_TABLE, Document, ReadOptions, ReadStats
from corpusprep.read.formats import Record, detect_format, parser
from corpusprep.read.inputs import RecordedIds, resolve_inputs
from corpusprep.read.streams import (
    SNIFF,
    Unopenable,
    Unreadable,
    iter_lines,
    open_decompressed,
    read_blocks,
    sniff_binary,
)


class _Skipped(Unreadable):
    """A file that is skipped, not failed, under auto and skip (empty, binary)."""


def iter_documents(
    inputs: Sequence[str | Path], options: ReadOptions | None = None, stats: ReadStats | None = None
) -> Iterator[Document]:
    """Documents from files, directories (recursive) and globs, in a deterministic order, streamed.
    Inputs are resolved now (InputError for a missing path or an empty directory/glob); files are read
    lazily as the iterator is consumed."""
    passed_over: list[tuple[Path, str]] = []
    files = resolve_inputs(inputs, passed_over)
    stats = stats if stats is not None else ReadStats()
    for directory, what in passed_over:
        stats.skip_directory("not_corpus", f"{directory}: skipped: holds {what}, not corpus")
    return _iter_files(files, options or ReadOptions(), stats)


def _iter_files(files: list[tuple[Path, str]], options: ReadOptions, stats: ReadStats) -> Iterator[Document]:
    for path, source in files:
        stats.files_seen += 1
        try:
            yield from _iter_file(path, source, options, stats)
        except _Skipped as error:
            stats.skip_file(error.reason, str(error))
        except Unreadable as error:
            if options.on_error != "skip":
                failure = InputError if isinstance(error, Unopenable) else DataError
                raise failure(str(error)) from error.__cause__
            stats.skip_file(error.reason, str(error))
        else:
            stats.files += 1


def _iter_file(path: Path, source: str, options: ReadOptions, stats: ReadStats) -> Iterator[Document]:
    name = path.name
    if storage.scheme_of(path) is not None:
        path = storage.url(path)  # messages name an object by its URL (pathlib folds `s3://` into `s3:/`)
    with open_decompressed(path) as (stream, kind):
        blocks = read_blocks(stream, path, kind)
        head = next(blocks, b"")
        if not head:
            raise _Skipped("empty_file", f"{path}: empty file")
        # Under auto the sign of a binary format wins over a misleading extension; a format the user gave
        # wins over both (a text file may begin with "PAR1").
        name = options.format if options.format != "auto" else detect_format(name, head[:SNIFF])
        fmt = FORMAT_TABLE[name]
        if fmt.binary:
            if kind:
                raise Unreadable("unreadable", f"{path}: compressed Parquet ({kind}) is not supported; "
                                               "Parquet compresses its pages itself")
            stream.seek(0)
            records = parser(fmt)(stream, path, options, stats)
            unit = ": row "
        else:
            binary = sniff_binary(head[:SNIFF])
            if binary:
                if options.on_error == "fail":
                    raise DataError(f"{path}: byte 0: {binary}, not text")
                raise _Skipped("binary", f"{path}: skipped: looks like {binary}, not text")
            if options.document_per_file and not fmt.plain_text:
                options = dataclasses.replace(options, document_per_file=False)  # auto: a JSONL file, say
            lines = iter_lines(chain([head], blocks), path, stats, options.max_document_bytes)
            records = parser(fmt)(lines, path, options, stats)
            unit = ":"
        seen = stats.documents_seen
        yield from _documents(records, path, source, unit, options, stats)
        if stats.documents_seen == seen:  # not a file with 0 documents and no word why
            empty = f"empty file ({'no rows' if fmt.binary else 'only whitespace'})"
            reason, why = fmt.no_documents or ("empty_file", empty)
            raise _Skipped(reason, f"{path}: {why}")


def _documents(records: Iterator[Record], path: Path, source: str, unit: str, options: ReadOptions,
               stats: ReadStats) -> Iterator[Document]:
    """Number every record (ids stay stable when a neighbour is skipped), skip or fail the bad ones; count
    the documents cut at the size bound (each part is a document of its own, with its own id)."""
    recorded = isinstance(source, RecordedIds)  # a curate output's kept documents: their own ids
    for index, (position, text, sentences, problem, part, doc_id) in enumerate(records):
        stats.documents_seen += 1
        if part:
            stats.document_parts += 1
            if part == 1:
                stats.documents_cut += 1
                stats.note("document_cut", f"{path}{unit}{position}: document longer than "
                           f"{options.max_document_bytes:,} bytes (--max-document-mb "
                           f"{options.max_document_mb:g}): cut into parts at line boundaries")
        if problem is None and recorded and (doc_id is None or CONTROL.search(doc_id) or not doc_id):
            problem = ("bad_id", "no document id (a string without control characters) in a file of "
                                 "recorded ids")
        if problem is None and (not text or text.isspace()):
            # Not corrupt data (Wikipedia has ~10% stub pages), so never an error, even under fail.
            problem = ("empty_document", "empty or whitespace-only document")
        if problem is not None:
            reason, detail = problem
            where = f"{path}{unit}{position}"
            if options.on_error == "fail" and reason != "empty_document":
                raise DataError(f"{where}: {detail}")
            stats.skip_document(reason, f"{where}: {detail}")
            continue
        stats.documents += 1
        yield Document(doc_id if recorded else f"{source}:{index}", text, sentences)
