"""Atomic output files and JSON helpers: a file appears under its final name complete, or not at all."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
from collections.abc import Iterator
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
    return json.loads(Path(path).read_text())


def read_record(path: str | Path) -> dict | None:
    """A JSON object corpusprep wrote (a marker, a run record), or None when it is missing or damaged."""
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def remove_stale_temps(directory: str | Path) -> int:
    """Delete temporary files and directories left by killed writes (never anything under a final name)."""
    removed = 0
    for tmp in sorted(Path(directory).rglob(".*.tmp-*"), reverse=True):
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        removed += 1
    return removed


def remove_stale_temps_of(path: Path) -> int:
    """Remove what killed writes of `path` left beside it (`.NAME.tmp-PID`, temp_name) when that
    process is gone. Not remove_stale_temps: it clears every temporary file under a directory,
    which only an output directory that a lock gives to one run may do; a file's directory is shared (the
    current directory, say), and another run may be writing its own file there."""
    removed = 0
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.tmp-*"):
        pid = tmp.name.rpartition(".tmp-")[2]
        if not pid.isdigit() or (int(pid) != os.getpid() and _alive(int(pid))):
            continue
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        removed += 1
    return removed


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
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        fsync_dir(tmp)
        if path.exists():  # a rerun of the same write after a crash that followed the rename
            shutil.rmtree(path)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
