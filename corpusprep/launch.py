"""The `corpusprep` command's first code, kept free of imports: loading the CLI (typer, the commands) takes
~0.1 s, and a Ctrl-C then must read as at any later instant, one line and exit 130, not a traceback."""

import sys


def main() -> None:
    try:
        from corpusprep.cli import main as run

        run()  # from here on the CLI says "interrupted" itself (errors.guarded)
    except KeyboardInterrupt:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second press while we say so
        from corpusprep.errors import INTERRUPTED, forget_interrupt

        print(f"corpusprep: {INTERRUPTED}", file=sys.stderr)
        forget_interrupt()
        sys.exit(130)
