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
from corpusprep.curate.options import OUTPUT_FORMATS, CurateOptions
from corpusprep.engine import storage
from corpusprep.engine.executor import Executor
from corpusprep.errors import printable
from corpusprep.read import ReadOptions

CurateDir = Annotated[Path, typer.Option("--output", "-o", help="Directory to write: kept/part-*.jsonl (or "
                                         ".parquet), removed.jsonl, curate.json, report.md, report.png.")]
OutputFormat = Annotated[str, typer.Option("--format", help=f"Kept documents as {' or '.join(OUTPUT_FORMATS)}"
                                           " "
                                           "(id, text; language, language_score with --languages).")]
Exact = Annotated[bool, typer.Option(help="Remove exact duplicates (equal after NFC, case folding and "
                                     "whitespace runs as one space).")]
Near = Annotated[bool, typer.Option(help="Remove near duplicates: MinHash + LSH, candidates verified; one "
                                    "document kept per cluster, the first read.")]
Shingle = Annotated[int, typer.Option(help="Words per shingle (datatrove, Lee et al. 2022: 5).")]
Permutations = Annotated[int, typer.Option(help="MinHash values per document (datatrove: 112 = 14 x 8).")]
Bands = Annotated[int, typer.Option(help="LSH bands, each of permutations / bands rows (datatrove: 14).")]
Threshold = Annotated[float, typer.Option(help="Estimated Jaccard similarity (the share of equal MinHash "
                                          "values) from which a candidate pair counts as near duplicates "
                                          "(ours; Lee et al. 2022 cut the true Jaccard at 0.8).")]
Lines = Annotated[bool, typer.Option("--lines/--no-lines", help="Also take out lines repeated across kept "
                                     "documents (boilerplate), in all but the first document holding each "
                                     "(reason shared-lines when none is left).")]
MinLineChars = Annotated[int, typer.Option(help="--lines: shorter lines are never taken out.")]
Decontaminate = Annotated[list[str] | None, typer.Option(
    help="Evaluation file (CoNLL-U, CoNLL NER columns, GLUE-style TSV/CSV/JSONL, SQuAD JSON; repeat the "
    "option for more): remove documents sharing an n-gram with one of its examples.", show_default=False)]
Ngram = Annotated[int, typer.Option(help="Words of the n-grams decontamination matches (GPT-3: 13).")]
MinExampleWords = Annotated[int, typer.Option(help="Examples shorter than --ngram words are matched whole "
                                              "from this many words (NeMo Curator: 8); shorter ones not.")]
Paragraphs = Annotated[bool, typer.Option("--paragraphs", help="Decontamination takes out only the matching "
                                          "paragraphs (lines), not the whole document.")]
Languages = Annotated[str, typer.Option(help="Keep documents in these languages (ISO 639-1, comma-separated: "
                                        "en,fr); empty: no language identification.")]
Filters = Annotated[str, typer.Option(help="Quality filters, comma-separated, in order: word-count, "
                                      "word-length, symbol-ratio, ellipsis-lines, repeated-lines, "
                                      "repeated-ngrams (gopher: all six), boilerplate-lines (all: every "
                                      "one).")]


@app.command("curate")
@opt.with_executor
@opt.with_read_options
def curate_command(
    inputs: opt.Inputs,
    output: CurateDir,
    output_format: OutputFormat = CurateOptions.format,
    exact: Exact = CurateOptions.exact,
    near: Near = CurateOptions.near,
    shingle: Shingle = CurateOptions.shingle,
    permutations: Permutations = CurateOptions.permutations,
    bands: Bands = CurateOptions.bands,
    threshold: Threshold = CurateOptions.threshold,
    lines: Lines = CurateOptions.lines,
    min_line_chars: MinLineChars = CurateOptions.min_line_chars,
    decontaminate: Decontaminate = None,
    ngram: Ngram = CurateOptions.ngram,
    min_example_words: MinExampleWords = CurateOptions.min_example_words,
    paragraphs: Paragraphs = CurateOptions.paragraphs,
    languages: Languages = "",
    filters: Filters = "",
    seed: opt.Seed = CurateOptions.seed,
    executor: Executor | None = None,  # --workers, --engine, --ray-address (with_executor)
    overwrite: opt.Overwrite = False,
    progress: opt.Progress = True,
    read_options: ReadOptions | None = None,  # --input-format ... --document-per-file (with_read_options)
) -> None:
    """Keep the documents worth training on: OUT/kept/part-*.jsonl, and a record of each removed one
    (OUT/removed.jsonl: id, reason, the document kept in its place or the evaluation example matched), with
    counts (curate.json) and a report (report.md, report.png). The output directory is an input every
    reading command accepts: it reads the kept documents."""
    from corpusprep.curate.build import curate

    refuse_stdout(output, "-o", "a directory")
    options = CurateOptions(
        format=output_format, exact=exact, near=near, shingle=shingle, permutations=permutations, bands=bands,
        threshold=threshold, lines=lines, min_line_chars=min_line_chars,
        decontaminate=tuple(decontaminate or ()), ngram=ngram, min_example_words=min_example_words,
        paragraphs=paragraphs, languages=tuple(languages.split(",")) if languages else (),
        filters=tuple(f for f in filters.split(",") if f.strip()), seed=seed,
    )  # fmt: skip
    stats = curate(inputs, output, options, read_options, executor=executor, overwrite=overwrite,
                   progress=progress)  # fmt: skip
    shown = printable(storage.url(output))
    if stats.get("nothing_to_do"):
        typer.echo(f"{shown}: already built with these inputs and options; nothing to do", err=True)
        return
    from corpusprep.read.document import read_notes

    removed = ", ".join(f"{n:,} {reason}" for reason, n in stats["removed"].items()) or "none"
    typer.echo(f"{shown}: kept {stats['kept']:,} of {stats['documents']:,} documents (removed: {removed}"
               f"{read_notes(stats['read'])}) in {stats['seconds']:.1f}s", err=True)
