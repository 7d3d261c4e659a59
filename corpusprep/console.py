"""Where every command prints through rich (summaries, progress bars, tables, `inspect`): one Console per
stream, made here and nowhere else.

Soft wrap: a message is one line whatever its length. Without it rich wraps at 80 columns whenever the
output is not a terminal (a pipe, a log file, CI), where it cannot know the width; a one-line message naming
a long path became two lines there. On a terminal the terminal wraps long lines itself. Plain `print` (the
trainer's entry points, errors) never wraps. No markup: messages name user paths and tokens ("out[1].txt",
"[UNK]"), which rich would otherwise read as styles (or fail on).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

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
