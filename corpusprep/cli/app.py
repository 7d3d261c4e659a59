"""The Typer application; each command lives in its own module beside this one and registers itself here."""

from typing import Annotated

import typer

from corpusprep import __version__

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


def _version(shown: bool) -> None:
    if shown:
        print(f"corpusprep {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """Options before the command (the app's help is Typer's `help` above)."""
