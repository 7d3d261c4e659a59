"""The Typer application; each command lives in its own module beside this one and registers itself here."""

import typer

app = typer.Typer(
    name="corpusprep",
    help="Turn raw text into BERT pre-training data: vocab -> sentences -> pairs -> masked, shuffled shards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help, not rich's panels: at 80 columns (a narrow or non-interactive terminal) rich cuts
    # long option names ("--max-seq-leng…") and keeps docstrings' line breaks; click wraps to the width
    rich_markup_mode=None,
)
