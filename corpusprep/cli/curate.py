"""`corpusprep curate`: documents -> the documents worth keeping (exact and near duplicates, evaluation-set
contamination, other languages and, when asked, low quality removed), with a record of every removal. The
stage's driver is corpusprep.curate.build; this module is its options and its summary line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli import options as opt
from corpusprep.cli.app import app
from corpusprep.console import refuse_stdout
from corpusprep.curate.options import CurateOptions
from corpusprep.engine import storage
from corpusprep.engine.stage import RunContext
from corpusprep.errors import printable
from corpusprep.read import ReadOptions

CurateDir = Annotated[Path, typer.Option("--output", "-o", help="Directory to write: kept/part-*.jsonl (or "
                                         ".parquet), removed.jsonl, curate.json, report.md, report.png.")]


@app.command("curate")
@opt.with_options(CurateOptions)  # --format ... --seed: each declared once, in CurateOptions
@opt.with_context()  # --workers, --engine, --ray-address, --overwrite, --progress
@opt.with_read_options  # --input-format ... --document-per-file
def curate_command(
    inputs: opt.Inputs, output: CurateDir, *, options: CurateOptions, context: RunContext,
    read_options: ReadOptions,
) -> None:
    """Keep the documents worth training on: OUT/kept/part-*.jsonl, and a record of each removed one
    (OUT/removed.jsonl: id, reason, the document kept in its place or the evaluation example matched), with
    counts (curate.json) and a report (report.md, report.png). The output directory is an input every
    reading command accepts: it reads the kept documents."""
    from corpusprep.curate.build import curate

    refuse_stdout(output, "-o", "a directory")
    stats = curate(inputs, output, options, read_options, context=context)
    shown = printable(storage.url(output))
    if stats.get("nothing_to_do"):
        typer.echo(f"{shown}: already built with these inputs and options; nothing to do", err=True)
        return
    from corpusprep.read.document import read_notes

    removed = ", ".join(f"{n:,} {reason}" for reason, n in stats["removed"].items()) or "none"
    typer.echo(f"{shown}: kept {stats['kept']:,} of {stats['documents']:,} documents (removed: {removed}"
               f"{read_notes(stats['read'])}) in {stats['seconds']:.1f}s", err=True)
