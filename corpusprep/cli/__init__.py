"""Command line entry point: `corpusprep COMMAND ...`. Errors become one line on stderr and an exit code."""

from __future__ import annotations

import sys

from corpusprep.cli.app import app
from corpusprep.errors import CorpusprepError

# Importing a command module registers its commands on `app`.
from corpusprep.cli import commands  # noqa: E402,F401  isort: skip


def main() -> None:
    try:
        app()
    except CorpusprepError as error:
        print(f"corpusprep: error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        print("corpusprep: interrupted", file=sys.stderr)
        sys.exit(130)
