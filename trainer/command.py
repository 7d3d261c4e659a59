"""What the `python -m trainer.*` commands share (run, export, import_hf, plot, evaluate), so that each
keeps only its own arguments and its body: the parser named for its module, with `--version` and one-line
usage errors (`errors.OneLineParser`), and `main(argv) -> int`, which runs the body under `errors.guarded`
(a bad setting or input, an OSError, Ctrl-C or SIGTERM: one line and its exit code, never a traceback).

    CLI = Command("trainer.plot", __doc__, add_arguments, run)
    build_parser, main = CLI.parser, CLI.main
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from corpusprep.errors import OneLineParser, guarded


@dataclass(frozen=True)
class Command:
    module: str  # `python -m MODULE`: the program's name in --help, --version and usage errors
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]  # the command's own arguments
    run: Callable[[argparse.Namespace], int | None]  # the body: its exit code (None: 0)

    def parser(self) -> argparse.ArgumentParser:
        parser = OneLineParser(prog=f"python -m {self.module}", description=self.description)
        self.add_arguments(parser)
        return parser

    def main(self, argv: list[str] | None = None) -> int:
        """Parse `argv` (a usage error: one line, exit 2), then run the body under `guarded`."""
        args = self.parser().parse_args(argv)
        return guarded(lambda: self.run(args))
