"""Errors a user sees as one clear line (no traceback), each with its exit code."""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from corpusprep import __version__


class OneLineParser(argparse.ArgumentParser):
    """argparse for the `python -m trainer.*` entry points: a bad or missing argument is one line and exit 2,
    as in `corpusprep` (argparse prints its whole usage block first); `--version` as in `corpusprep`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action="version", version=f"%(prog)s (corpusprep {__version__})",
                          help="show the version and exit")  # fmt: skip

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def plural(n: int, word: str) -> str:
    """"1 row", "2 rows": counts in messages."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def printable(text: str) -> str:
    """`text` with what cannot be written as UTF-8 escaped: the bytes of a file name that is not valid UTF-8
    (which Python keeps as surrogates) as \\xNN, as in document ids (`caf\\xe9.txt`). Every message goes
    through here on its way out (errors, warnings, stats examples), so a file is always named one way."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte (JSON can carry one)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


class CorpusprepError(Exception):
    """A failure caused by the data or the environment: exit code 1."""

    exit_code = 1


class UsageError(CorpusprepError):
    """Bad options, a missing or unreadable path, an unknown format: exit code 2."""

    exit_code = 2


class InputError(UsageError):
    """An input path that cannot be used (missing, unreadable, unknown format)."""


class DataError(CorpusprepError):
    """Bad content inside an input, under `--on-error fail`: names the file and position."""


# The last line of defence of every entry point: errors that escaped the specific checks, as one line.
WRITE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS}
INTERRUPTED = "interrupted; rerun to continue"


def _chain(error: BaseException) -> list[BaseException]:
    """`error` and what it was raised from or during (torch turns an interrupted save into RuntimeError)."""
    seen: list[BaseException] = []
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    return seen


def _file_ancestor(path: Path) -> Path | None:
    return next((p for p in (path, *path.parents) if p.is_file()), None)


_TEMP_NAME = re.compile(r"^\.(.+)\.tmp-\d+$")  # engine.files.temp_name: `.NAME.tmp-PID` is written as NAME


def _user_path(name: str | bytes) -> Path:
    path = Path(os.fsdecode(name))
    temp = _TEMP_NAME.match(path.name)
    return path.with_name(temp[1]) if temp else path


def describe_os_error(error: OSError) -> tuple[str, int]:
    """`PATH: what went wrong (strerror)` and its exit code: 2 when a path names the wrong kind of thing (a
    file where a directory is needed, or the reverse), 1 when the system refused or failed (full disk,
    read-only, permission)."""
    number, reason = error.errno, error.strerror or str(error)
    path = _user_path(error.filename) if error.filename is not None else None
    if number == errno.EISDIR and error.filename2 is not None:  # os.replace(tmp, a directory)
        path = _user_path(error.filename2)
    if path is None:
        if number in WRITE_ERRNOS:
            return f"cannot write ({reason}; disk full or file size limit?)", 1
        return reason, 1
    if number == errno.ENOTDIR and (parent := _file_ancestor(path)) is not None:
        return f"{parent}: is a file, not a directory (needed for {path})", 2
    if number == errno.EEXIST and path.is_file():
        return f"{path}: is a file, not a directory", 2
    if number == errno.EISDIR:
        return f"{path}: is a directory, not a file", 2
    if number in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return f"{path}: cannot write ({reason}; disk full or file size limit?)", 1
    if number == errno.EROFS:
        return f"{path}: cannot write ({reason})", 1
    return f"{path}: {reason}", 1


_RUST_OS_ERROR = re.compile(r"^(.*) \(os error (\d+)\)")  # tokenizers, polars: "File too large (os error 27)"


def os_error_in(error: BaseException) -> OSError | None:
    """The OSError behind `error`: itself, what it was raised from, or one a Rust library (tokenizers, polars)
    reported as text ("File too large (os error 27)")."""
    for e in _chain(error):
        if isinstance(e, OSError) and e.errno is not None:
            return e
    for e in _chain(error):
        if match := _RUST_OS_ERROR.match(str(e).splitlines()[0] if str(e) else ""):
            return OSError(int(match[2]), match[1])
    return None


def describe(error: BaseException) -> tuple[str, int] | None:
    """One line and an exit code for a failure the user can act on; None for a bug (let it show)."""
    chain = _chain(error)
    if any(isinstance(e, KeyboardInterrupt) for e in chain):
        return INTERRUPTED, 130
    if isinstance(error, CorpusprepError):
        return str(error), error.exit_code
    for e in chain:
        if isinstance(e, CorpusprepError):
            return str(e), e.exit_code
    found = os_error_in(error)
    return describe_os_error(found) if found is not None else None


def forget_interrupt() -> None:
    """CPython remembers a KeyboardInterrupt raised inside exec() of a string (dataclasses and namedtuple
    build their methods so, while a module is imported) and, under `python -m`, then ends the process by
    SIGINT at exit even though the interrupt was handled: a caller would see -2, not 130. The next exec()
    of a string clears that flag."""
    exec("")


def guarded(main: Callable[[], int | None], prefix: str = "error: ") -> int:
    """Run an entry point: a user-facing failure becomes one line on stderr and its exit code."""
    try:
        return main() or 0
    except SystemExit as exit:
        # Typer turns Ctrl-C into a silent exit 130: say what happened.
        if exit.code == 130 and any(isinstance(e, KeyboardInterrupt) for e in _chain(exit)):
            print(f"{prefix.removesuffix('error: ')}{INTERRUPTED}", file=sys.stderr)
            forget_interrupt()
            return 130
        raise
    except BaseException as error:
        found = describe(error)
        if found is None:
            raise
        line, code = found
        line = printable(line)  # a file name that is not UTF-8: as in the warnings and document ids
        print(f"{prefix.removesuffix('error: ') if code == 130 else prefix}{line}", file=sys.stderr)
        if code == 130:
            forget_interrupt()
        return code
