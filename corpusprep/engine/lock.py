"""One writer per output directory: a second run on the same directory fails at start, clearly."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from corpusprep.errors import UsageError

LOCK_NAME = ".corpusprep.lock"


@contextlib.contextmanager
def exclusive_dir(directory: str | Path) -> Iterator[Path]:
    """Hold an advisory lock on `directory` (created if needed) for the duration of a run.

    The kernel releases the lock when the process dies, so a killed run never leaves a stale lock.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            raise UsageError(
                f"{directory}: another corpusprep run is writing here (pid {holder}); wait for it or pick "
                "another output directory"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield directory
    finally:
        os.close(fd)
