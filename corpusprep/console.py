"""Where every command's output meets the terminal: one rich Console per stream for its messages, progress
bars, tables and `inspect` (made here and nowhere else), and "-" as an output: standard output where the
output is text (`sentences`, `demo-corpus`), one line refusing it where it is a directory or a binary file.

Soft wrap: a message is one line whatever its length. Without it rich wraps at 80 columns whenever the
output is not a terminal (a pipe, a log file, CI), where it cannot know the width; a one-line message naming
a long path became two lines there. On a terminal the terminal wraps long lines itself. Plain `print` (the
trainer's entry points, errors) never wraps. No markup: messages name user paths and tokens ("out[1].txt",
"[UNK]"), which rich would otherwise read as styles (or fail on).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from corpusprep.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console


@functools.cache
def console(stderr: bool = True) -> Console:
    """The Console for stderr (messages and progress, the default) or stdout (a command's output)."""
    from rich.console import Console  # rich is imported only by a command that prints with it (~0.03 CPU-s)

    return Console(stderr=stderr, soft_wrap=True, markup=False)


def show_progress(requested: bool) -> bool:
    """Whether a transient progress bar is drawn: only on a terminal. Elsewhere nothing is animated and
    rich would leave an empty line where the bar was."""
    return requested and console().is_terminal


STDOUT = "-"  # an output named "-" is standard output, as every Unix tool reads it


def refuse_stdout(value: object, option: str, output: str) -> None:
    """An output option given "-" where the command writes what standard output cannot carry (a directory,
    a binary file): one line, exit 2, rather than a file or folder named "-"."""
    if str(value) == STDOUT:
        raise UsageError(f"{option} -: the output is {output}, which cannot go to standard output; give a "
                         "path")


def write_stdout(write: Callable[[TextIO], None]) -> bool:
    """Run `write(sys.stdout)`; False when the reader went away first (`| head`): not an error, so the
    rest is dropped quietly, as `cat` does, and nothing more is printed to stdout."""
    try:
        write(sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return False
    return True
