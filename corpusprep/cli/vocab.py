"""`corpusprep vocab` (train a WordPiece vocab, or adopt Google's) and `corpusprep demo-corpus`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli import options as opt
from corpusprep.cli.app import app
from corpusprep.console import STDOUT, console, refuse_stdout, show_progress, write_stdout
from corpusprep.demo_corpus import DEFAULT_MAX_MB, DemoStats, update_demo_corpus, write_demo_jsonl
from corpusprep.errors import UsageError, printable

VOCAB_HELP = (
    "Train a BERT WordPiece vocab on the input documents (streamed) and write it to --output.\n\n"
    "Writes vocab.txt (Google's format, for BertTokenizerFast), tokenizer.json (tokenizers.Tokenizer) and "
    "vocab_report.json (counts, timing, [UNK] rate and word pieces per word on a sample of the input). "
    "Rerunning with the same inputs and options reuses the directory."
)


TRAINING_OPTIONS = ("vocab_size", "min_frequency", "limit_alphabet", "reserved")  # unused by --from-vocab


@app.command("vocab", help=VOCAB_HELP)
def vocab(
    ctx: typer.Context,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Vocab directory: vocab.txt, tokenizer.json, report.")
    ],
    inputs: Annotated[
        list[str] | None,
        typer.Argument(help="Input files, directories (read recursively) or globs.", show_default=False),
    ] = None,
    vocab_size: Annotated[
        int, typer.Option(help="Tokens in vocab.txt, specials and reserved slots included (BERT: 30522).")
    ] = 30000,
    min_frequency: Annotated[
        int, typer.Option(help="A pair of pieces must occur this often to be merged.")
    ] = 2,
    limit_alphabet: Annotated[
        int, typer.Option(help="Keep at most this many characters (most frequent first); rarer ones: [UNK].")
    ] = 1000,
    reserved: Annotated[
        int,
        typer.Option(help="Extra [unused0..N-1] tokens after [PAD], free for later use (Google: 99)."),
    ] = 0,
    cased: Annotated[
        bool, typer.Option("--cased", help="Keep case (default: lowercase). Accents: see --strip-accents.")
    ] = False,
    strip_accents: Annotated[
        bool | None,
        typer.Option(
            "--strip-accents/--keep-accents",
            help="Remove accents (é -> e) before tokenizing. Default: strip when lowercasing (BERT-uncased, "
            "fine for English), keep with --cased. Most other languages should pass --keep-accents.",
            show_default=False,
        ),
    ] = None,
    from_vocab: Annotated[
        Path | None,
        typer.Option(
            help="Build the directory from an existing vocab.txt (e.g. Google's) instead of training; "
            "inputs, if given, are only read to measure its [UNK] rate and pieces per word.",
            show_default=False,
        ),
    ] = None,
    input_format: opt.Format = "auto",
    one_sentence_per_line: opt.OneSentencePerLine = False,
    text_field: opt.TextField = "text",
    on_error: opt.OnError = "auto",
    max_document_mb: opt.MaxDocumentMB = opt.MAX_DOCUMENT_MB,
    document_per_file: opt.DocumentPerFile = False,
    overwrite: opt.Overwrite = False,
    progress: opt.Progress = True,
) -> None:
    """Train a WordPiece vocab (see VOCAB_HELP)."""
    from corpusprep.tokenize.vocab import VocabOptions, build_vocab

    refuse_stdout(output, "-o", "a directory (vocab.txt, tokenizer.json, ...)")

    if from_vocab is not None:  # the vocab is given, not trained: an option that shapes training is a mistake
        # by name: typer ships its own copy of click, whose ParameterSource is not click's
        sources = {n: getattr(ctx.get_parameter_source(n), "name", "") for n in TRAINING_OPTIONS}
        given = [n for n, source in sources.items() if source == "COMMANDLINE"]
        if given:
            flags = " / ".join(f"--{name.replace('_', '-')}" for name in given)
            raise UsageError(f"--from-vocab takes the vocab as it is: {flags} would be ignored (they shape "
                             "training); leave them out, or train without --from-vocab")

    options = VocabOptions(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        limit_alphabet=limit_alphabet,
        reserved=reserved,
        cased=cased,
        strip_accents=strip_accents,
        from_vocab=str(from_vocab.absolute()) if from_vocab else None,
    )
    read = opt.read_options(input_format, one_sentence_per_line, text_field, on_error,
                             max_document_mb, document_per_file)
    if not inputs and from_vocab is None:
        raise UsageError("give input paths to train on, or --from-vocab FILE")
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description:<9}"),
        TextColumn("{task.fields[documents]:>10,} documents"),
        TextColumn("{task.fields[mb]:>9.1f} MB"),
        TextColumn("{task.fields[rate]:>6.1f} MB/s"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console(), transient=True, disable=not show_progress(progress)) as bar:
        task = bar.add_task("reading", documents=0, mb=0.0, rate=0.0)

        def progress(phase: str, documents: int, nbytes: int) -> None:
            elapsed = bar.tasks[0].elapsed or 1e-9
            mb = nbytes / 1e6
            bar.update(task, description=phase, documents=documents, mb=mb, rate=mb / elapsed)

        report = build_vocab(inputs, output, options, read, overwrite=overwrite, progress=progress)
    _print_summary(output, report)


def _print_summary(output: Path, report: dict) -> None:
    from corpusprep.read.document import read_notes

    out = console()
    if report["reused"]:
        out.print(f"{printable(str(output))}: up to date (same inputs and options); pass --overwrite to "
                  "rebuild")
        return
    docs, seconds = report["documents"], report["seconds"]
    line = f"{printable(str(output))}: {report['vocab_size']:,} tokens"
    if report["inputs"]["files"]:
        skipped = sum(docs["skipped"].values())
        line += (f" from {docs['used']:,} documents ({skipped:,} skipped), "
                 f"{report['characters'] / 1e6:.1f}M characters in {seconds['total']:.1f} s")
    out.print(line + read_notes(report.get("read_stats") or {}))
    if report["sample"]:
        sample = report["sample"]
        out.print(f"  on a sample of {sample['documents']} documents: [UNK] {sample['unk_rate']:.3%} of "
                  f"tokens, {sample['pieces_per_word']:.3f} word pieces per word", highlight=False)


DEMO_HELP = (
    "Write the built-in demo corpus as JSONL: docstrings of Python's standard library and of corpusprep's "
    "dependencies, built from the running Python install (no download, no text in the repository) in a "
    "fixed order, so the same install gives the same file."
)


@app.command("demo-corpus", help=DEMO_HELP)
def demo_corpus(
    output: Annotated[Path, typer.Option(
        "--output", "-o", help="JSONL file to write ({id, text} a line); - for standard output.")],
    max_mb: Annotated[float, typer.Option(help="Stop at this many MB of text.", min=0.01)] = DEFAULT_MAX_MB,
    overwrite: Annotated[bool, typer.Option(
        help="Replace an existing file that is not this demo corpus (another --max-mb, say).")] = False,
) -> None:
    """Write the demo corpus (see DEMO_HELP)."""
    from corpusprep.engine.artifact import check_output_file

    if str(output) == STDOUT:  # for a pipe: built as it streams, no file to compare or keep
        stats = DemoStats()
        if write_stdout(lambda stream: write_demo_jsonl(stream, max_mb, stats)):
            console().print(f"standard output: {stats.summary()}", highlight=False)
        return
    check_output_file(output, [], "demo-corpus")
    console().print(update_demo_corpus(output, max_mb, overwrite=overwrite), highlight=False)
