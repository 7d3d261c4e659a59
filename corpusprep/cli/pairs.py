"""`corpusprep build-pairs`: documents -> the objective's rows (Parquet): NSP or SOP sentence pairs, exactly
balanced, or `none`'s rows of whole sentences, packed; resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli.app import app
from corpusprep.cli.options import (
    MAX_DOCUMENT_MB,
    DocumentPerFile,
    Format,
    Inputs,
    Language,
    LineBreaks,
    MaxDocumentMB,
    OnError,
    OneSentencePerLine,
    Overwrite,
    Progress,
    Seed,
    TextField,
    VocabDir,
    with_executor,
)
from corpusprep.console import refuse_stdout
from corpusprep.engine.executor import Executor
from corpusprep.errors import printable
from corpusprep.objectives import objective as objective_spec


@app.command("build-pairs")
@with_executor
def build_pairs_command(
    inputs: Inputs,
    vocab: VocabDir,
    output: Annotated[Path, typer.Option("--output", "-o", help="Pairs directory to write.")],
    max_seq_length: Annotated[
        int, typer.Option(help="Row length with special tokens: A+B get 3 fewer, a none piece 2.")
    ] = 128,
    objective: Annotated[
        str,
        typer.Option(
            metavar="nsp|sop|none",
            help="Sentence task: nsp (BERT), sop (ALBERT: sentence order) or none (RoBERTa: "
            "masked LM only, rows of whole sentences).",
        ),
    ] = "nsp",
    pack: Annotated[
        bool | None,
        typer.Option(
            "--pack/--no-pack",
            help="none: fill rows with pieces of several documents "
            "(default for none; nsp and sop rows are pairs).",
        ),
    ] = None,
    short_seq_prob: Annotated[
        float, typer.Option(help="Share of rows given a shorter random target length (nsp, sop).")
    ] = 0.1,
    short_seq_by: Annotated[
        str,
        typer.Option(
            metavar="segment|document",
            help="Draw the short target for each new segment (the share of short rows follows "
            "--short-seq-prob), or once per document as Google's script does.",
        ),
    ] = "segment",
    dupe_factor: Annotated[
        int, typer.Option(help="Passes over the data, each with different random choices.")
    ] = 5,
    docs_per_partition: Annotated[
        int, typer.Option(help="Documents per partition: the pool NotNext segments come from; bounds memory.")
    ] = 2048,
    validation_fraction: Annotated[float, typer.Option(help="Share of documents (by id) held out.")] = 0.01,
    splitter: Annotated[
        str,
        typer.Option(
            help="Sentence splitter for text that is not pre-split: default, lines, pysbd, "
            "blingfire, sentencex."
        ),
    ] = "default",
    language: Language = "en",
    line_breaks: LineBreaks = "auto",
    seed: Seed = 12345,
    executor: Executor | None = None,  # --workers, --engine, --ray-address (with_executor)
    overwrite: Overwrite = False,
    progress: Progress = True,
    input_format: Format = "auto",
    one_sentence_per_line: OneSentencePerLine = False,
    text_field: TextField = "text",
    on_error: OnError = "auto",
    max_document_mb: MaxDocumentMB = MAX_DOCUMENT_MB,
    document_per_file: DocumentPerFile = False,
) -> None:
    """Build NSP or SOP sentence pairs, or rows of whole sentences (none):
    PAIRS_DIR/{train,validation}/part-*.parquet + stats.json."""
    from corpusprep.cli.options import read_options
    from corpusprep.pair.build import PairOptions, build_pairs
    from corpusprep.read.document import read_notes

    refuse_stdout(output, "-o", "a directory of Parquet files")

    options = PairOptions(
        max_seq_length=max_seq_length,
        short_seq_prob=short_seq_prob,
        short_seq_by=short_seq_by.lower(),
        dupe_factor=dupe_factor,
        docs_per_partition=docs_per_partition,
        validation_fraction=validation_fraction,
        seed=seed,
        splitter=splitter,
        language=language,
        line_breaks=line_breaks.lower(),
        objective=objective.lower(),
        pack=pack,
    )
    stats = build_pairs(
        inputs,
        vocab,
        output,
        options,
        read_options(input_format, one_sentence_per_line, text_field, on_error,
                             max_document_mb, document_per_file),
        executor=executor,
        overwrite=overwrite,
        progress=progress,
    )
    if stats.get("nothing_to_do"):
        typer.echo(f"{printable(str(output))}: already built with these inputs, vocab and options; "
                   "nothing to do", err=True)
        return
    # Documents in = used + skipped: the reader's skips (bad JSON lines, empty documents) count too.
    read = stats["read"]
    reasons = {**read["skipped"], **stats["documents_skipped"]}
    skipped = ", ".join(f"{n:,} {reason}" for reason, n in sorted(reasons.items()) if n) or "none"
    files = read_notes(read)  # files and directories skipped, documents cut
    rows = objective_spec(stats.get("objective")).summary(stats)  # what the rows are
    typer.echo(
        f"{printable(str(output))}: {rows} from "
        f"{stats['documents_used']:,} of {read['documents_seen']:,} documents (skipped: {skipped}{files}) "
        f"in {stats['seconds']:.1f}s",
        err=True,
    )
