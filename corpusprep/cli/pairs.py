"""`corpusprep build-pairs`: documents -> the objective's rows (Parquet): NSP or SOP sentence pairs, exactly
balanced, or `none`'s rows of whole sentences, packed; resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli.app import app
from corpusprep.cli.options import (
    Inputs,
    Language,
    LineBreaks,
    Overwrite,
    Progress,
    Seed,
    VocabDir,
    with_executor,
    with_read_options,
)
from corpusprep.console import refuse_stdout
from corpusprep.engine import storage
from corpusprep.engine.executor import Executor
from corpusprep.errors import printable
from corpusprep.objectives import objective as objective_spec
from corpusprep.pair.options import PairOptions
from corpusprep.read import ReadOptions

PairsDir = Annotated[Path, typer.Option("--output", "-o", help="Pairs directory to write.")]
MaxSeqLength = Annotated[
    int, typer.Option(help="Row length with special tokens: A+B get 3 fewer, a none piece 2.")
]
Objective = Annotated[
    str,
    typer.Option(
        metavar="nsp|sop|none",
        help="Sentence task: nsp (BERT), sop (ALBERT: sentence order) or none (RoBERTa: "
        "masked LM only, rows of whole sentences).",
    ),
]
Pack = Annotated[
    bool | None,
    typer.Option(
        "--pack/--no-pack",
        help="none: fill rows with pieces of several documents "
        "(default for none; nsp and sop rows are pairs).",
    ),
]
ShortSeqProb = Annotated[
    float, typer.Option(help="Share of rows given a shorter random target length (nsp, sop).")
]
ShortSeqBy = Annotated[
    str,
    typer.Option(
        metavar="segment|document",
        help="Draw the short target for each new segment (the share of short rows follows "
        "--short-seq-prob), or once per document as Google's script does.",
    ),
]
DupeFactor = Annotated[int, typer.Option(help="Passes over the data, each with different random choices.")]
DocsPerPartition = Annotated[
    int, typer.Option(help="Documents per partition: the pool NotNext segments come from; bounds memory.")
]
ValidationFraction = Annotated[float, typer.Option(help="Share of documents (by id) held out.")]
Splitter = Annotated[
    str,
    typer.Option(help="Sentence splitter for text that is not pre-split: default, lines, pysbd, blingfire, "
                 "sentencex."),
]


@app.command("build-pairs")
@with_executor
@with_read_options
def build_pairs_command(
    inputs: Inputs,
    vocab: VocabDir,
    output: PairsDir,
    max_seq_length: MaxSeqLength = PairOptions.max_seq_length,
    objective: Objective = PairOptions.objective,
    pack: Pack = PairOptions.pack,
    short_seq_prob: ShortSeqProb = PairOptions.short_seq_prob,
    short_seq_by: ShortSeqBy = PairOptions.short_seq_by,
    dupe_factor: DupeFactor = PairOptions.dupe_factor,
    docs_per_partition: DocsPerPartition = PairOptions.docs_per_partition,
    validation_fraction: ValidationFraction = PairOptions.validation_fraction,
    splitter: Splitter = PairOptions.splitter,
    language: Language = PairOptions.language,
    line_breaks: LineBreaks = PairOptions.line_breaks,
    seed: Seed = PairOptions.seed,
    executor: Executor | None = None,  # --workers, --engine, --ray-address (with_executor)
    overwrite: Overwrite = False,
    progress: Progress = True,
    read_options: ReadOptions | None = None,  # --input-format ... --document-per-file (with_read_options)
) -> None:
    """Build NSP or SOP sentence pairs, or rows of whole sentences (none):
    PAIRS_DIR/{train,validation}/part-*.parquet + stats.json."""
    from corpusprep.pair.build import build_pairs
    from corpusprep.read.document import read_notes

    refuse_stdout(output, "-o", "a directory of Parquet files")
    options = PairOptions(
        max_seq_length=max_seq_length, short_seq_prob=short_seq_prob, short_seq_by=short_seq_by.lower(),
        dupe_factor=dupe_factor, docs_per_partition=docs_per_partition,
        validation_fraction=validation_fraction, seed=seed, splitter=splitter, language=language,
        line_breaks=line_breaks.lower(),
        objective=objective.lower(), pack=pack,
    )
    stats = build_pairs(inputs, vocab, output, options, read_options, executor=executor, overwrite=overwrite,
                        progress=progress)  # fmt: skip
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
