"""`corpusprep sentences`: split documents into sentences, one per line (BERT format) or as Parquet. The
stage's driver is corpusprep.split.sentences; this module is its options and its summary line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli import options as opt
from corpusprep.cli.app import app
from corpusprep.console import STDOUT, console, refuse_stdout
from corpusprep.engine.stage import RunContext
from corpusprep.errors import UsageError
from corpusprep.read import ReadOptions
from corpusprep.split import SentencesOptions

Output = Annotated[
    str,
    typer.Option(
        "--output",
        "-o",
        help="File to write: sentences one per line with a blank line between documents, or Parquet with "
        "--format parquet (the default when the name ends in .parquet); - for standard output (text).",
    ),
]
StatsFile = Annotated[
    str | None,
    typer.Option("--stats", help="Also write the run's counts (read, split, skipped by reason) as JSON here.",
                 show_default=False),
]
OverwriteFile = Annotated[
    bool,
    typer.Option(help="Replace an existing OUTPUT file (one built from other inputs or options, or not "
                 "by corpusprep) instead of refusing."),
]


@app.command("sentences")
@opt.with_options(SentencesOptions)  # --splitter ... --line-breaks: each declared once, in SentencesOptions
@opt.with_read_options  # --input-format ... --document-per-file
@opt.with_context(parallel=False, overwrite=OverwriteFile)  # --overwrite, --progress: one process
def sentences(
    inputs: opt.Inputs, output: Output, stats_path: StatsFile = None, *, options: SentencesOptions,
    read_options: ReadOptions, context: RunContext,
) -> None:
    """Split the input documents into sentences and write them to OUTPUT (atomically).

    A line break inside a document ends a sentence unless --line-breaks joins it (auto: the lines of
    hard-wrapped paragraphs). Documents without any sentence are skipped and counted; the summary shows
    documents read, used and skipped by reason.
    """
    from corpusprep.split.sentences import run_sentences
    from corpusprep.split.stage import output_format

    to_stdout = output == STDOUT  # text for a pipe: no file, so no record and no "up to date"
    refuse_stdout(stats_path, "--stats", "a JSON file of counts")
    paths = opt.output_files({"--output": None if to_stdout else output, "--stats": stats_path}, inputs,
                             "sentences")
    out = paths.get("--output")
    options = replace(options, format=output_format(out or Path(output), options.format))  # by name
    if to_stdout and options.format != "text":
        raise UsageError("-o -: standard output takes the text format (a sentence a line); write Parquet "
                         "to a file")
    report = run_sentences(inputs, out, options, read_options, stats_file=paths.get("--stats"),
                           context=context)
    if report is not None:
        _print_summary(report, report["read"]["bytes"] / 1e6 / max(report["seconds"], 1e-9))


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
