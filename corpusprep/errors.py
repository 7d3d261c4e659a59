"""Errors a user sees as one clear line (no traceback), each with its exit code.

`UsageError` (exit 2): a bad option, a missing or unreadable path, an unknown format. `DataError` (exit 1):
bad content (under `--on-error fail`, or where no skip is possible). Every entry point runs under `guarded`,
which prints either as one line through `printable` (control characters and undecodable bytes of file names
escaped) and turns SIGTERM into `Terminated`, a `KeyboardInterrupt`, so a terminated run leaves as Ctrl-C
does (workers stopped, even a stopped one: SIGCONT after SIGTERM), with exit 143."""

from __future__ import annotations

import argparse
import errno
import os
import re
import signal
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
                          help="show the version and exit")

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def plural(n: int, word: str) -> str:
    """"1 row", "2 rows": counts in messages."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


# Control characters (C0, DEL, C1) and the Unicode line and paragraph separators, as escapes: a file name
# may hold any of them, and a message must stay one line (a newline in a name would split it in two).
_CONTROL_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))} | {
    0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x2028: "\\u2028", 0x2029: "\\u2029"
}


def printable(text: str) -> str:
    """`text` as one line of UTF-8: the bytes of a file name that is not valid UTF-8 (which Python keeps as
    surrogates) as \\xNN, as in document ids (`caf\\xe9.txt`), and control characters as \\n, \\r, \\t,
    \\xNN; a URL shown through a Path (pathlib folds `s3://b/k` into `s3:/b/k`) with its `//` back. Every
    message goes through here on its way out (errors, warnings, stats examples), so a file is always named
    one way and a message is always one line."""
    if not text.isprintable():  # cheap when clean: str.isprintable is one C loop
        text = text.translate(_CONTROL_ESCAPES)
    if ":/" in text:
        text = _unfolded(text)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte (JSON can carry one)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _unfolded(text: str) -> str:
    """`s3:/b/k` as `s3://b/k`, for the schemes of the storage seam's table (`storage.STORES`, read where it
    is loaded: a process that never loaded it handled no URL), not where a name merely holds `word:/`."""
    storage = sys.modules.get("corpusprep.engine.storage")
    schemes = sorted(s for s in getattr(storage, "STORES", ()) if s != "file")
    if not schemes:
        return text
    folded = rf"(?<![\w+.\-/:])({'|'.join(map(re.escape, schemes))}):/(?=[^/])"
    return re.sub(folded, r"\1://", text, flags=re.IGNORECASE)


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
INTERRUPTED = "interrupted; rerun to continue"
TERMINATED = "terminated (SIGTERM); rerun to continue"
TERMINATED_EXIT = 128 + signal.SIGTERM  # 143: what a shell reports for a process SIGTERM ended


class Terminated(KeyboardInterrupt):
    """SIGTERM (a job scheduler's time limit, `kill`, a shutdown), raised where Ctrl-C would be so that it
    takes the same way out: workers stopped, temporary files removed, outputs left resumable; one line
    (TERMINATED) and exit 143 instead of a silent death."""


_terminated = False  # SIGTERM arrived: typer turns any KeyboardInterrupt into "exit 130", losing its type


def _terminate(signum: int, frame: object) -> None:
    global _terminated
    _terminated = True
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one while we clean up
    raise Terminated


def _interrupt(chain: list[BaseException]) -> tuple[str, int] | None:
    """The line and exit code of an interrupt in `chain`: SIGTERM (143) or Ctrl-C (130); None when none."""
    if not any(isinstance(e, KeyboardInterrupt) for e in chain):
        return None
    if _terminated or any(isinstance(e, Terminated) for e in chain):
        return TERMINATED, TERMINATED_EXIT
    return INTERRUPTED, 130


def _chain(error: BaseException) -> list[BaseException]:
    """`error` and what it was raised from or during (torch turns an interrupted save into RuntimeError)."""
    seen: list[BaseException] = []
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    return seen


def _file_ancestor(path: Path) -> Path | None:
    return next((p for p in (path, *path.parents) if p.is_file()), None)


# storage.temp_name's `.NAME.tmp-PID-START-N` (or an older `-PID-START` or `-PID`): NAME, PID, START. Here, in
# the module the engine imports, so that the errors and the engine's clean-up read names with one pattern.
TEMP_NAME = re.compile(r"\.(.+)\.tmp-(\d{1,9})(?:-(\d{1,20})(?:-\d{1,20})?)?")


def user_path(name: str | bytes | os.PathLike) -> Path:
    """The path a user knows: a temporary name (`.NAME.tmp-PID-START-N`, being written) as its final NAME."""
    path = Path(os.fsdecode(name))
    temp = TEMP_NAME.fullmatch(path.name)
    return path.with_name(temp[1]) if temp else path


# what a failed write says, by errno: the one wording of a full disk wherever a write fails (any stage,
# any library: pyarrow's "Error writing bytes to file. Detail: [errno 28] ..." included)
WRITE_FAILURES = {
    errno.ENOSPC: "disk full",
    errno.EDQUOT: "disk quota full",
    errno.EFBIG: "file too large for the file system or this process's file size limit",
    errno.EROFS: "a read-only location",
}


def describe_os_error(error: OSError) -> tuple[str, int]:
    """`PATH: what went wrong (strerror)` and its exit code: 2 when a path names the wrong kind of thing (a
    file where a directory is needed, or the reverse), 1 when the system refused or failed (full disk,
    read-only, permission)."""
    number, reason = error.errno, error.strerror or str(error)
    path = user_path(error.filename) if error.filename is not None else None
    if number == errno.EISDIR and error.filename2 is not None:  # os.replace(tmp, a directory)
        path = user_path(error.filename2)
    if number in WRITE_FAILURES:
        failed = f"cannot write: {WRITE_FAILURES[number]} ({os.strerror(number)})"
        return (f"{path}: {failed}" if path is not None else failed), 1
    if path is None:
        return reason, 1
    if number == errno.ENOTDIR and (parent := _file_ancestor(path)) is not None:
        return f"{parent}: is a file, not a directory (needed for {path})", 2
    if number == errno.EEXIST and path.is_file():
        return f"{path}: is a file, not a directory", 2
    if number == errno.EISDIR:
        return f"{path}: is a directory, not a file", 2
    return f"{path}: {reason}", 1


def write_failed(path: str | os.PathLike, error: OSError) -> CorpusprepError:
    """A failed write of `path` as one line (`describe_os_error`'s), for code that reports it itself."""
    named = error if error.filename is not None else OSError(error.errno, error.strerror or str(error), path)
    return CorpusprepError(describe_os_error(named)[0])


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
    if (interrupt := _interrupt(chain)) is not None:
        return interrupt
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
    """Run an entry point: a user-facing failure becomes one line on stderr and its exit code. SIGTERM is
    handled as Ctrl-C is (`Terminated`): one line, exit 143, and the run resumes where it stopped."""
    handled = _handle_sigterm(_terminate)
    try:
        return main() or 0
    except SystemExit as exit:
        # Typer turns Ctrl-C into a silent exit 130: say what happened.
        interrupt = _interrupt(_chain(exit)) if exit.code == 130 else None
        if interrupt is not None:
            print(f"{prefix.removesuffix('error: ')}{interrupt[0]}", file=sys.stderr)
            forget_interrupt()
            return interrupt[1]
        raise
    except BaseException as error:
        found = describe(error)
        if found is None:
            raise
        line, code = found
        line = printable(line)  # a file name that is not UTF-8: as in the warnings and document ids
        interrupted = code in (130, TERMINATED_EXIT)
        print(f"{prefix.removesuffix('error: ') if interrupted else prefix}{line}", file=sys.stderr)
        if interrupted:
            forget_interrupt()
        return code
    finally:
        if handled:  # the outcome is decided: a later SIGTERM (at shutdown) ends the process as before
            _handle_sigterm(signal.SIG_DFL)


def _handle_sigterm(handler: Callable | int) -> bool:
    """Install `handler` for SIGTERM; False where that cannot be done (not the main thread: a test's)."""
    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:
        return False
    return True
