"""Command line entry point: `corpusprep COMMAND ...`. Errors become one line on stderr and an exit code."""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
from types import ModuleType

from corpusprep.cli.app import app
from corpusprep.errors import guarded, printable

# Importing a command module registers its commands on `app`.
from corpusprep.cli import commands  # noqa: E402,F401  isort: skip


PREFIX = "corpusprep: error: "


def main() -> None:
    # No command does linear algebra in numpy, and OpenBLAS starts a thread per core when numpy is imported
    # (~0.03-0.06 CPU-s in each process and pool worker); a user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _reuse_freed_memory()
    # What is alive now (modules, classes, functions: most of a command's Python objects) lives until exit:
    # out of the collector's sight, every full collection skips it instead of traversing it again.
    gc.freeze()
    # Skips and repairs (file and position) are logged by the stages as they happen; show them as one-liners,
    # a file name that is not UTF-8 escaped as everywhere else (errors.printable).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("corpusprep: warning: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    # A CorpusprepError, an OSError (full disk, read-only, a file where a directory is needed) or Ctrl-C:
    # one line and its exit code (1 data or I/O, 2 usage, 130 interrupted); anything else is a bug and shows.
    code = guarded(_run, prefix=PREFIX)
    # The outcome is decided and said: a Ctrl-C from here on (a second press, during shutdown) would print a
    # traceback or end the process by SIGINT instead of with this code.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)


def _reuse_freed_memory() -> None:
    """Keep freed blocks of up to 64 MiB for reuse instead of handing them back to the kernel.

    glibc serves big allocations with their own mmap and unmaps them on free; the stages allocate and free
    arrays of megabytes all the time (tokens, offsets, Arrow buffers, the tokenizer's own), and each is
    page-faulted in again: ~55k faults and 0.1-0.15 CPU-s of kernel time per command on 10 MB of text. With
    these two settings the heap reuses them (peak memory unchanged: what is freed is reused, not added).
    Forked pool workers inherit them. Not glibc (musl, macOS): nothing to do."""
    import ctypes

    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None and sys.platform.startswith("linux"):
        m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
        mallopt(m_mmap_threshold, 64 * 2**20)
        mallopt(m_trim_threshold, 256 * 2**20)  # the heap's free top is kept up to this size


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def _run() -> int:
    """The app, with click's parse errors (a bad value, an unknown or missing option) as one line, exit 2,
    like every other error, instead of click's three (usage, "Try --help", error)."""
    import typer
    import typer.main

    errors = _click_exceptions()
    root = typer.main.get_command(app)
    try:
        code = root.main(standalone_mode=False)
    except getattr(errors, "NoArgsIsHelpError", ()) as error:  # `corpusprep` alone: the help, as before
        error.show()
        return error.exit_code
    except errors.ClickException as error:
        print(f"{PREFIX}{parse_error_line(error, root)}", file=sys.stderr)
        return error.exit_code
    except typer.Abort as error:
        if isinstance(error.__cause__, KeyboardInterrupt):  # click before typer's copy: `guarded` says so
            raise
        print(f"{PREFIX}aborted (end of input)", file=sys.stderr)
        return 1
    if code == 130:  # typer turns Ctrl-C into a silent exit 130: let `guarded` say "interrupted"
        raise KeyboardInterrupt
    return code if isinstance(code, int) else 0


def _click_exceptions() -> ModuleType:
    """The exceptions of the click that typer runs on: its own copy in recent versions, click before."""
    try:
        from typer._click import exceptions
    except ImportError:
        from click import exceptions
    return exceptions


def parse_error_line(error: Exception, root: object = None) -> str:
    """`shard: Invalid value for '--masked-lm-prob': 'x' is not a valid float.`: the subcommand, then
    click's message, on one line."""
    names = []
    ctx = getattr(error, "ctx", None)
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    if not names and sys.argv[1:2] and sys.argv[1] in getattr(root, "commands", {}):
        names = [sys.argv[1]]  # an option's missing value is reported without its command
    message = " ".join(error.format_message().split())
    return f"{' '.join(reversed(names))}: {message}" if names else message
