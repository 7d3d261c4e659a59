"""`corpusprep sentences`: split documents into sentences, one per line (BERT format) or as Parquet."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli import options as opt
from corpusprep.cli.app import app
from corpusprep.console import STDOUT, console, refuse_stdout, show_progress, write_stdout
from corpusprep.errors import UsageError, printable

PROGRESS_EVERY = 256  # documents between progress-bar refreshes: a refresh costs more than splitting one


@app.command("sentences")
def sentences(
    inputs: opt.Inputs,
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            help="File to write: sentences one per line with a blank line between documents, or Parquet with "
            "--format parquet (the default when the name ends in .parquet); - for standard output (text).",
        ),
    ],
    splitter: Annotated[
        str,
        typer.Option(
            help="default: corpusprep's rule-based splitter (every script's sentence marks; abbreviations, "
            "ordinals and dates of the --language); lines: every non-empty line is a sentence; pysbd, "
            "blingfire, sentencex: those libraries, if installed. Input that is already split (BERT format) "
            "is kept as it is.",
        ),
    ] = "default",
    output_format_: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="text (Google's one-sentence-per-line format) or parquet (one row per sentence: doc_id, "
            "sentence_index, text). Default: parquet for a .parquet output, else text.",
            show_default=False,
        ),
    ] = None,
    stats_path: Annotated[
        str | None,
        typer.Option(
            "--stats",
            help="Also write the run's counts (read, split, skipped by reason) as JSON here.",
            show_default=False,
        ),
    ] = None,
    language: opt.Language = "en",
    line_breaks: opt.LineBreaks = "auto",
    input_format: opt.Format = "auto",
    one_sentence_per_line: opt.OneSentencePerLine = False,
    text_field: opt.TextField = "text",
    on_error: opt.OnError = "auto",
    max_document_mb: opt.MaxDocumentMB = opt.MAX_DOCUMENT_MB,
    document_per_file: opt.DocumentPerFile = False,
    overwrite: Annotated[
        bool,
        typer.Option(help="Replace an existing OUTPUT file (one built from other inputs or options, or not "
                     "by corpusprep) instead of refusing."),
    ] = False,
    progress: opt.Progress = True,
) -> None:
    """Split the input documents into sentences and write them to OUTPUT (atomically).

    A line break inside a document ends a sentence unless --line-breaks joins it (auto: the lines of
    hard-wrapped paragraphs). Documents without any sentence are skipped and counted; the summary shows
    documents read, used and skipped by reason.
    """
    from corpusprep.engine.artifact import describe_changes, input_files
    from corpusprep.engine.files import remove_stale_temps_of, write_json
    from corpusprep.read import ReadStats, iter_documents
    from corpusprep.split.stage import (
        SentenceStats,
        make_splitter,
        output_format,
        read_output_record,
        record_path,
        split_documents,
        write_output_record,
        write_parquet,
        write_sentences,
        write_text,
    )

    to_stdout = output == STDOUT  # text for a pipe: no file, so no record and no "up to date"
    refuse_stdout(stats_path, "--stats", "a JSON file of counts")
    paths = opt.output_files({"--output": None if to_stdout else output, "--stats": stats_path}, inputs,
                             "sentences")  # fmt: skip
    out, stats_file = paths.get("--output"), paths.get("--stats")
    fmt = output_format(out or Path(output), output_format_)
    if to_stdout and fmt != "text":
        raise UsageError("-o -: standard output takes the text format (a sentence a line); write Parquet "
                         "to a file")  # fmt: skip
    read_options = opt.read_options(input_format, one_sentence_per_line, text_field, on_error,
                                    max_document_mb, document_per_file)
    split = make_splitter(splitter, language, line_breaks.lower())
    # What the bytes depend on, as an artifact's identity: the inputs (path, size, mtime) and the options.
    identity = {"kind": "sentences", "inputs": {"files": input_files(inputs)},
                "options": {"format": fmt, "splitter": splitter, "language": language,
                            "line_breaks": line_breaks.lower(), "input_format": read_options.format,
                            "text_field": read_options.text_field, "on_error": read_options.on_error,
                            "max_document_mb": read_options.max_document_mb,
                            "document_per_file": read_options.document_per_file}}
    for path in (out, out and record_path(out), stats_file):
        if path is not None:
            remove_stale_temps_of(path)
    if out is not None and out.exists() and not overwrite:
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
        return
    if out is not None:
        record_path(out).unlink(missing_ok=True)  # the file it described is about to be replaced
    read_stats, split_stats = ReadStats(), SentenceStats()
    documents = iter_documents(inputs, read_options, read_stats)  # resolves inputs now: bad paths fail early

    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (
        SpinnerColumn(),
        TextColumn("{task.fields[documents]:>10,} documents"),
        TextColumn("{task.fields[sentences]:>12,} sentences"),
        TextColumn("{task.fields[mb]:>9.1f} MB"),
        TextColumn("{task.fields[rate]:>6.1f} MB/s"),
        TimeElapsedColumn(),
    )
    start = time.perf_counter()
    with Progress(*columns, console=console(), transient=True, disable=not show_progress(progress)) as bar:
        task = bar.add_task("splitting", documents=0, sentences=0, mb=0.0, rate=0.0)

        def tracked():
            for n, item in enumerate(split_documents(documents, split, split_stats), 1):
                if n % PROGRESS_EVERY == 0:
                    mb = read_stats.bytes / 1e6
                    rate = mb / max(time.perf_counter() - start, 1e-9)
                    bar.update(task, documents=n, sentences=split_stats.sentences, mb=mb, rate=rate)
                yield item
            if split_stats.used == 0:  # inside the write: the empty output is removed, never renamed
                from corpusprep.read.document import no_usable_documents

                raise no_usable_documents(inputs, read_stats.to_dict(), dict(split_stats.skipped))

        if out is None:
            if not write_stdout(lambda stream: write_sentences(stream, tracked())):
                return  # the reader stopped reading (`| head`): nothing more to say
        else:
            (write_parquet if fmt == "parquet" else write_text)(out, tracked())
    seconds = time.perf_counter() - start

    report = {"output": printable(str(out)) if out else "standard output", "format": fmt,
              "splitter": splitter, "language": language, "line_breaks": line_breaks.lower(),
              "seconds": round(seconds, 3),
              "read": read_stats.to_dict(), "split": split_stats.to_dict()}
    if out is not None:
        write_output_record(out, identity, report)
    if stats_file is not None:
        write_json(stats_file, report)
    _print_summary(report, read_stats.bytes / 1e6 / max(seconds, 1e-9))


def _print_summary(report: dict, rate: float) -> None:
    from corpusprep.read.document import read_notes

    out = console()
    read, split = report["read"], report["split"]
    skipped = {**read["skipped"], **split["skipped"]}
    why = ", ".join(f"{n:,} {reason}" for reason, n in sorted(skipped.items())) or "none"
    out.print(
        f"{report['output']}: {split['sentences']:,} sentences from {split['used']:,} of "
        f"{read['documents_seen']:,} documents (skipped: {why}); {read['files']:,} files, "
        f"{read['bytes'] / 1e6:.1f} MB in {report['seconds']:.1f} s ({rate:.1f} MB/s)"
    )
    if notes := read_notes(read):  # files and directories skipped, documents cut
        out.print(f"  {notes.removeprefix('; ')}")
