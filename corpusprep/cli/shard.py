"""`corpusprep shard`, `inspect`, `stats`, `validate`: make training shards from pairs, look, check."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli.app import app
from corpusprep.cli.options import VocabDir, with_context, with_options
from corpusprep.console import console, refuse_stdout
from corpusprep.engine import storage
from corpusprep.engine.stage import RunContext
from corpusprep.errors import DataError, UsageError, plural, printable
from corpusprep.shard.options import ShardOptions

SplitOpt = Annotated[str, typer.Option(help="Split to read: train or validation.")]
PairsDir = Annotated[Path, typer.Argument(help="Pairs directory written by `corpusprep build-pairs`.")]
ShardsDir = Annotated[Path, typer.Option("--output", "-o", help="Shards directory to write.")]


@app.command()
@with_options(ShardOptions)  # --masked-lm-prob ... --seed: each declared once, in ShardOptions
@with_context()  # --workers, --engine, --ray-address, --overwrite, --progress
def shard(
    pairs_dir: PairsDir, vocab: VocabDir, output: ShardsDir, *, options: ShardOptions, context: RunContext
) -> None:
    """Mask pairs or rows of pieces (BERT's 15%, 80/10/10) into globally shuffled, balanced, checksummed
    Parquet shards, for the objective the pairs were built for (nsp, sop or none)."""
    from corpusprep.shard.build import MANIFEST, build_shards

    refuse_stdout(output, "-o", "a directory of Parquet shards")
    if storage.is_file(pairs_dir / MANIFEST):
        raise UsageError(f"{pairs_dir}: is a shards directory (has {MANIFEST}); shard reads the pairs "
                         "directory that `corpusprep build-pairs` wrote")
    manifest = build_shards(pairs_dir, vocab, output, options, context=context)
    parts = [
        f"{name}: {plural(s['examples'], 'example')} in {plural(len(s['shards']), 'shard')}"
        for name, s in manifest["splits"].items()
    ]
    typer.echo(f"{printable(storage.url(output))}: " + "; ".join(parts), err=True)


@app.command()
def inspect(
    shards_dir: Annotated[Path, typer.Argument(help="Shards directory.")],
    n: Annotated[int, typer.Option("-n", help="Examples to show.", min=1)] = 5,
    split: SplitOpt = "train",
    vocab: Annotated[Path | None, typer.Option(help="Vocab directory (default: the manifest's).")] = None,
) -> None:
    """Show examples decoded: segments A/B (or pieces) in colour, each prediction as shown/original."""
    from corpusprep.shard.report import render_examples

    out = console(stderr=False)
    for text in render_examples(shards_dir, n=n, split=split, vocab_dir=vocab):
        out.print(text)
        out.print()


@app.command()
def stats(
    shards_dir: Annotated[Path, typer.Argument(help="Shards directory.")],
    plot: Annotated[
        Path | None,
        typer.Option(help="Plot lengths and shard balance to this image (png, svg, pdf...: by extension)."),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Batch size of the padding estimate.", min=1)] = 32,
) -> None:
    """Manifest totals, length histogram, padding waste and shard balance."""
    from corpusprep.shard.report import check_plot_path, column_stats, plot_stats, stats_tables

    refuse_stdout(plot, "--plot", "an image file")
    fmt = check_plot_path(plot, shards_dir) if plot is not None else None  # before any work
    result = column_stats(shards_dir, batch_size=batch_size)
    out = console(stderr=False)
    for table in stats_tables(result):
        out.print(table)
    if plot is not None and fmt is not None:
        plot_stats(result, plot, fmt)
        out.print(f"plot: {storage.url(plot)}")


@app.command()
def validate(
    directory: Annotated[
        Path,
        typer.Argument(
            metavar="DIR", help="Any output: vocab, pairs, shards, trainer run or checkpoint, pipeline run."
        ),
    ],
) -> None:
    """Check any output (shards: every checksum and invariant); say what it is; a line per problem, exit 1."""
    from corpusprep.shard.validate import validate_output

    kind, problems, summary = validate_output(directory)
    shown = storage.url(directory)  # an s3:// URL as given (pathlib folds its `//`)
    for problem in problems:
        print(printable(f"{shown}: {problem}"), file=sys.stderr)  # one line, whatever the names hold
    if problems:
        count = f"{len(problems)} problem{'' if len(problems) == 1 else 's'}"
        raise DataError(f"{shown}: INVALID {kind}: {count} (listed above)")
    print(printable(f"{shown}: valid {kind}" + (f" ({summary})" if summary else "")))
