"""Command line entry point: `corpusprep COMMAND ...`. Errors become one line on stderr and an exit code."""

from __future__ import annotations

import logging
import sys

from corpusprep.cli.app import app
from corpusprep.errors import CorpusprepError

# Importing a command module registers its commands on `app`.
from corpusprep.cli import commands  # noqa: E402,F401  isort: skip


def main() -> None:
    # Skips and repairs (file and position) are logged by the stages as they happen; show them as one-liners.
    logging.basicConfig(format="corpusprep: warning: %(message)s", level=logging.WARNING, stream=sys.stderr)
    try:
        app()
    except CorpusprepError as error:
        print(f"corpusprep: error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        print("corpusprep: interrupted", file=sys.stderr)
        sys.exit(130)
