"""Atomic output files and JSON helpers: a file appears under its final name complete, or not at all."""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from corpusprep.errors import CorpusprepError, os_error_in


def temp_name(path: Path) -> Path:
    """The temporary name a file is written under before it is renamed into place (same directory)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success fsync and rename it to `path`, on failure remove it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    _remove_path(tmp)  # a name left there (a link planted to redirect the write) is never written through
    try:
        yield tmp
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        ours = isinstance(error, CorpusprepError) or not isinstance(error, Exception)
        cause = None if ours else os_error_in(error)
        if cause is not None and cause.filename is None:
            # a failed write() (full disk) names no file: name the one being written
            raise OSError(cause.errno, cause.strerror, str(path)) from error
        raise


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON atomically, with sorted keys so equal content gives equal bytes."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path) -> Any:
    """JSON this process wrote itself, read back (tests). Anything else read back from disk is untrusted
    and goes through `corpusprep.engine.records.load_record`, against its schema."""
    return json.loads(Path(path).read_text())


def remove_stale_temps(directory: str | Path, names: Iterable[str]) -> int:
    """Remove what killed writes left under `directory`: the temporary names (`.NAME.tmp-PID`, temp_name) of
    the files and directories named by `names` (relative paths, fnmatch patterns: an output's own files),
    in the folders where they are written, and of no process alive but this one. Never a walk of the
    whole tree: a user's folder beside an output may hold names of this shape, and they are not ours."""
    directory = Path(directory)
    patterns = list(names)
    removed = 0
    for folder in sorted({p.rpartition("/")[0] for p in patterns}):
        for where in [directory] if not folder else sorted(directory.glob(folder)):
            if where.is_symlink() or not where.is_dir() or (folder and _linked_below(directory, where)):
                continue
            prefix = f"{where.relative_to(directory).as_posix()}/" if where != directory else ""
            for tmp in sorted(where.glob(".*.tmp-*")):
                match = _TEMP.fullmatch(tmp.name)
                if match and _stale(int(match[2])) and any(
                    fnmatch.fnmatchcase(prefix + match[1], p) for p in patterns
                ):
                    _remove_path(tmp)
                    removed += 1
    return removed


def remove_stale_temps_of(path: Path) -> int:
    """Remove what killed writes of the one file `path` left beside it (its own temporary names only: its
    directory is shared, with the current directory say, and another run may be writing its own file)."""
    return remove_stale_temps(path.parent, [glob.escape(path.name)])


_TEMP = re.compile(r"\.(.+)\.tmp-(\d{1,9})")  # temp_name's shape: `.NAME.tmp-PID`


def _stale(pid: int) -> bool:
    return pid == os.getpid() or not _alive(pid)


def _linked_below(directory: Path, where: Path) -> bool:
    """Is a folder between `directory` and `where` a symbolic link (which could lead anywhere)?"""
    return any(p.is_symlink() for p in [where, *where.parents] if directory in p.parents)


def _remove_path(path: Path) -> None:
    """Delete a file, a link (never what it points to) or a directory tree."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:  # another user's process (PermissionError)
        return True
    return True


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary directory to fill; on success rename it to `path` (replacing an older one), on
    failure (a full disk, a kill's cleanup) remove it, so `path` is always complete or absent."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    _remove_path(tmp)
    tmp.mkdir()
    try:
        yield tmp
        fsync_dir(tmp)
        if path.exists() or path.is_symlink():  # a rerun of the same write after a crash that followed the
            _remove_path(path)  # rename (a link there: the link goes, never what it points at)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
