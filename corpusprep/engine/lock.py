"""Writers and readers of an output directory keep apart through its lock file, `.corpusprep.lock`.

A writer (every command that writes an output, the trainer in its run dir) holds an exclusive lock for its
whole run; a reader (a stage reading another's output: build-pairs its vocab, shard its pairs and vocab, the
trainer its shards) holds a shared lock for its whole run. So a second writer fails at start, a writer fails
at start while a reader reads (`shard --overwrite` while a trainer trains on the shards), and a reader fails
at start while a writer writes; each with one line naming the other process. The kernel releases a lock
when its process dies, so a killed run never leaves a stale one.

The lock file is opened without following a symbolic link and used only if it is a regular file with one
name (a link or a hard link to another file would have that file truncated), never blocking on a FIFO.
flock does not reach across machines on every network file system: the trainer also checks each shard's
identity as it opens it (trainer/data.py).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from corpusprep.engine import storage
from corpusprep.errors import UsageError

LOCK_NAME = ".corpusprep.lock"


def _open(directory: Path) -> int | None:
    """The directory's lock file, opened (created if needed) without following a link or blocking; a name
    that is not a plain regular file of its own is refused in one line. None where it cannot be created (a
    read-only input: nobody can write there either)."""
    path = directory / LOCK_NAME
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UsageError(f"{path}: a symbolic link, not corpusprep's lock file; remove it (corpusprep "
                             "never opens a link it did not make)") from None  # fmt: skip
        if error.errno in (errno.EISDIR, errno.ENXIO, errno.ENODEV):
            raise UsageError(f"{path}: not a regular file, so not corpusprep's lock; remove it") from None
        if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and not path.exists():
            return None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        what = "a hard link to another file" if stat.S_ISREG(st.st_mode) else "not a regular file (a FIFO?)"
        raise UsageError(f"{path}: {what}, so not corpusprep's lock file; remove it")
    return fd


def _readers(fd: int) -> list[int]:
    """The pids holding a shared lock on the file of `fd` (Linux's /proc/locks; [] elsewhere)."""
    st = os.fstat(fd)
    file = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"  # as /proc/locks names it
    try:
        lines = Path("/proc/locks").read_text().splitlines()  # the kernel's table, not a store
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if "FLOCK" in fields and "READ" in fields and len(fields) >= 6:
            pid, where = fields[-4], fields[-3]
            if where == file and pid.isdigit():
                found.append(int(pid))
    return sorted(set(found))


@contextlib.contextmanager
def exclusive_dir(directory: str | Path) -> Iterator[Path]:
    """Hold the writer's lock on `directory` (created if needed) for the duration of a run; refused in one
    line while another run writes or reads it."""
    storage.makedirs(directory)
    with _locked(Path(directory), exclusive=True):
        yield Path(directory)


@contextlib.contextmanager
def shared_dir(directory: str | Path) -> Iterator[Path]:
    """Hold a reader's lock on the output `directory` while a run reads it: refused in one line while a
    writer writes it, and a writer is refused while this is held."""
    with _locked(Path(directory), exclusive=False):
        yield Path(directory)


@contextlib.contextmanager
def _locked(directory: Path, exclusive: bool) -> Iterator[None]:
    directory = storage.local_path(directory)  # flock: this machine's file system (issue 24: object stores)
    fd = _open(directory) if directory.is_dir() else None
    if fd is None:  # a read-only directory: nobody writes there (a write of ours fails with its own line)
        yield
        return
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            readers_only = exclusive and _granted(fd, fcntl.LOCK_SH)
            if readers_only:
                pids = ", ".join(str(p) for p in _readers(fd) if p != os.getpid()) or "unknown"
                raise UsageError(
                    f"{directory}: a corpusprep process is reading this output (pid {pids}); replacing it "
                    "now would change what that process reads: wait for it to finish, or pick another "
                    "directory"
                ) from None
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            advice = "wait for it or pick another output directory" if exclusive else "wait for it to finish"
            raise UsageError(f"{directory}: another corpusprep run is writing here (pid {holder}); {advice}"
                             ) from None  # fmt: skip
        if exclusive:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def _granted(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
