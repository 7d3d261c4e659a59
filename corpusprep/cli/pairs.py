"""`corpusprep build-pairs`: documents -> the objective's rows (Parquet): NSP or SOP sentence pairs, exactly
balanced, or `none`'s rows of whole sentences, packed; resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli.app import app
from corpusprep.cli.options import Inputs, VocabDir, with_context, with_options, with_read_options
from corpusprep.console import refuse_stdout
from corpusprep.engine import storage
from corpusprep.engine.stage import RunContext
from corpusprep.errors import printable
from corpusprep.objectives import objective as objective_spec
from corpusprep.pair.options import PairOptions
from corpusprep.read import ReadOptions

PairsDir = Annotated[Path, typer.Option("--output", "-o", help="Pairs directory to write.")]


@app.command("build-pairs")
@with_options(PairOptions)  # --max-seq-length ... --seed: each declared once, in PairOptions
@with_context()  # --workers, --engine, --ray-address, --overwrite, --progress
@with_read_options  # --input-format ... --document-per-file
def build_pairs_command(
    inputs: Inputs, vocab: VocabDir, output: PairsDir, *, options: PairOptions, context: RunContext,
    read_options: ReadOptions,
) -> None:
    """Build NSP or SOP sentence pairs, or rows of whole sentences (none):
    PAIRS_DIR/{train,validation}/part-*.parquet + stats.json."""
    from corpusprep.pair.build import build_pairs
    from corpusprep.read.document import read_notes

    refuse_stdout(output, "-o", "a directory of Parquet files")
    stats = build_pairs(inputs, vocab, output, options, read_options, context=context)
    if stats.get("nothing_to_do"):
        typer.echo(f"{printable(storage.url(output))}: already built with these inputs, vocab and options; "
                   "nothing to do", err=True)
        return
    # Documents in = used + skipped: the reader's skips (bad JSON lines, empty documents) count too.
    read = stats["read"]
    reasons = {**read["skipped"], **stats["documents_skipped"]}
    skipped = ", ".join(f"{n:,} {reason}" for reason, n in sorted(reasons.items()) if n) or "none"
    files = read_notes(read)  # files and directories skipped, documents cut
    rows = objective_spec(stats.get("objective")).summary(stats)  # what the rows are
    typer.echo(
        f"{printable(storage.url(output))}: {rows} from "
        f"{stats['documents_used']:,} of {read['documents_seen']:,} documents (skipped: {skipped}{files}) "
        f"in {stats['seconds']:.1f}s",
        err=True,
    )
