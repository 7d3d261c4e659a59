"""Command line entry point: `corpusprep COMMAND ...`. Errors become one line on stderr and an exit code."""

from __future__ import annotations

import gc
import logging
import os
import sys

from corpusprep.cli.app import app
from corpusprep.errors import guarded

# Importing a command module registers its commands on `app`.
from corpusprep.cli import commands  # noqa: E402,F401  isort: skip


def main() -> None:
    # No command does linear algebra in numpy, and OpenBLAS starts a thread per core when numpy is imported
    # (~0.03-0.06 CPU-s in each process and pool worker); a user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # What is alive now (modules, classes, functions: most of a command's Python objects) lives until exit:
    # out of the collector's sight, every full collection skips it instead of traversing it again.
    gc.freeze()
    # Skips and repairs (file and position) are logged by the stages as they happen; show them as one-liners.
    logging.basicConfig(format="corpusprep: warning: %(message)s", level=logging.WARNING, stream=sys.stderr)
    # A CorpusprepError, an OSError (full disk, read-only, a file where a directory is needed) or Ctrl-C:
    # one line and its exit code (1 data or I/O, 2 usage, 130 interrupted); anything else is a bug and shows.
    sys.exit(guarded(app, prefix="corpusprep: error: "))
