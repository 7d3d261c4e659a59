"""`corpusprep vocab` (train a WordPiece vocab, or adopt Google's) and `corpusprep demo-corpus`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli import options as opt
from corpusprep.cli.app import app
from corpusprep.console import STDOUT, console, refuse_stdout, write_stdout
from corpusprep.demo_corpus import DEFAULT_MAX_MB, DemoStats, update_demo_corpus, write_demo_jsonl
from corpusprep.engine import storage
from corpusprep.engine.stage import RunContext
from corpusprep.errors import UsageError, printable
from corpusprep.read import ReadOptions
from corpusprep.tokenize.options import VocabOptions

VOCAB_HELP = (
    "Train a BERT WordPiece vocab on the input documents (streamed) and write it to --output.\n\n"
    "Writes vocab.txt (Google's format, for BertTokenizerFast), tokenizer.json (tokenizers.Tokenizer) and "
    "vocab_report.json (counts, timing, [UNK] rate and word pieces per word on a sample of the input). "
    "Rerunning with the same inputs and options reuses the directory."
)


TRAINING_OPTIONS = ("vocab_size", "min_frequency", "limit_alphabet", "reserved")  # unused by --from-vocab


VocabOut = Annotated[
    Path, typer.Option("--output", "-o", help="Vocab directory: vocab.txt, tokenizer.json, report.")
]
VocabInputs = Annotated[
    list[str] | None,
    typer.Argument(help="Input files, directories (read recursively) or globs.", show_default=False),
]


@app.command("vocab", help=VOCAB_HELP)
@opt.with_options(VocabOptions)  # --vocab-size ... --from-vocab: each declared once, in VocabOptions
@opt.with_read_options  # --input-format ... --document-per-file
@opt.with_context(parallel=False)  # --overwrite, --progress: the tokenizers trainer runs its own threads
def vocab(
    ctx: typer.Context, output: VocabOut, inputs: VocabInputs = None, *, options: VocabOptions,
    read_options: ReadOptions, context: RunContext,
) -> None:
    """Train a WordPiece vocab (see VOCAB_HELP)."""
    from corpusprep.tokenize.vocab import build_vocab

    refuse_stdout(output, "-o", "a directory (vocab.txt, tokenizer.json, ...)")

    if options.from_vocab is not None:  # the vocab is given, not trained: an option that shapes training is
        # a mistake; by name: typer ships its own copy of click, whose ParameterSource is not click's
        sources = {n: getattr(ctx.get_parameter_source(n), "name", "") for n in TRAINING_OPTIONS}
        given = [n for n, source in sources.items() if source == "COMMANDLINE"]
        if given:
            flags = " / ".join(f"--{name.replace('_', '-')}" for name in given)
            raise UsageError(f"--from-vocab takes the vocab as it is: {flags} would be ignored (they shape "
                             "training); leave them out, or train without --from-vocab")
    if not inputs and options.from_vocab is None:
        raise UsageError("give input paths to train on, or --from-vocab FILE")
    report = build_vocab(inputs, output, options, read_options, context=context)
    _print_summary(output, report)


def _print_summary(output: Path, report: dict) -> None:
    from corpusprep.read.document import read_notes

    out = console()
    if report["reused"]:
        out.print(f"{printable(storage.url(output))}: up to date (same inputs and options); pass --overwrite "
                  "to rebuild")
        return
    docs, seconds = report["documents"], report["seconds"]
    line = f"{printable(storage.url(output))}: {report['vocab_size']:,} tokens"
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
    from corpusprep.engine.placement import check_output_file

    if str(output) == STDOUT:  # for a pipe: built as it streams, no file to compare or keep
        stats = DemoStats()
        if write_stdout(lambda stream: write_demo_jsonl(stream, max_mb, stats)):
            console().print(f"standard output: {stats.summary()}", highlight=False)
        return
    check_output_file(output, [], "demo-corpus")
    console().print(update_demo_corpus(output, max_mb, overwrite=overwrite), highlight=False)
