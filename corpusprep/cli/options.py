"""Command-line options shared by every command that reads user text, so they read the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Inputs = Annotated[
    list[str],
    typer.Argument(help="Input files, directories (read recursively) or glob patterns.", show_default=False),
]
Format = Annotated[
    str,
    typer.Option(
        "--input-format",
        help="Input format: auto (by extension and content), text (blank-line separated documents), "
        "bert (one sentence per line), jsonl, parquet, wiki (WikiExtractor <doc> blocks).",
    ),
]
OneSentencePerLine = Annotated[
    bool,
    typer.Option(
        "--one-sentence-per-line",
        help="Input is Google's BERT format: one sentence per line, a blank line between documents "
        "(same as --input-format bert).",
    ),
]
TextField = Annotated[str, typer.Option(help="JSONL key or Parquet column holding the document text.")]
OnError = Annotated[
    str,
    typer.Option(
        help="What to do with a bad document (undecodable record, missing text field): skip it and count it "
        "in the stats, or fail with the file and position.",
    ),
]
VocabDir = Annotated[
    Path, typer.Option("--vocab", help="Vocab directory written by `corpusprep vocab` (holds tokenizer.json).")
]
Workers = Annotated[
    int, typer.Option(help="Worker processes (0: one per available core).", min=0)
]
Seed = Annotated[int, typer.Option(help="Seed for every random choice; same seed, same output.")]
Overwrite = Annotated[
    bool, typer.Option(help="Replace an existing, different output directory instead of refusing.")
]
