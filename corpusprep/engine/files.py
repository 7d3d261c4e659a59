"""Atomic output files and JSON helpers: a file appears under its final name complete, or not at all."""

from __future__ import annotations

import fnmatch
import glob
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.storage import atomic_dir, atomic_path, fsync_dir, temp_name
from corpusprep.errors import TEMP_NAME

__all__ = ["atomic_dir", "atomic_path", "fsync_dir", "read_json", "remove_stale_temps",
           "remove_stale_temps_of", "parse_temp", "stale_temps", "temp_name", "writer_gone",
           "write_json"]


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON atomically, with sorted keys so equal content gives equal bytes."""
    storage.write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path) -> Any:
    """JSON this process wrote itself, read back (tests). Anything else read back from disk is untrusted
    and goes through `corpusprep.engine.records.load_record`, against its schema."""
    return json.loads(storage.read_text(path))


def remove_stale_temps(directory: str | Path, names: Iterable[str]) -> int:
    """Remove what killed writes left under `directory` (`stale_temps`); how many."""
    found = stale_temps(directory, names)
    for tmp in found:
        storage.remove_tree(tmp)
    return len(found)


def stale_temps(directory: str | Path, names: Iterable[str]) -> list[Path]:
    """What killed writes left under `directory`: the temporary names (`.NAME.tmp-PID-START-N`) of the files
    and directories named by `names` (relative paths, fnmatch patterns: an output's own files), in the
    folders where they are written, and of no process alive but this one. Never a walk of the whole tree:
    a user's folder beside an output may hold names of this shape, and they are not ours. None on an object
    store: its writes are staged locally and put whole (`storage.Store.atomic_path`)."""
    directory = Path(directory)
    patterns = list(names)
    found: list[Path] = []
    if storage.store_for(directory).local(directory) is None:
        return found
    for folder in sorted({p.rpartition("/")[0] for p in patterns}):
        for where in [directory] if not folder else storage.glob(directory, folder):
            linked = where.is_symlink() or (folder and _linked_below(directory, where))
            if linked or not storage.is_dir(where):
                continue
            prefix = f"{where.relative_to(directory).as_posix()}/" if where != directory else ""
            for tmp in storage.glob(where, ".*.tmp-*"):
                temp = parse_temp(tmp.name)
                if temp and _stale(temp[1], temp[2]) and any(
                    fnmatch.fnmatchcase(prefix + temp[0], p) for p in patterns
                ):
                    found.append(tmp)
    return found


def remove_stale_temps_of(path: Path) -> int:
    """Remove what killed writes of the one file `path` left beside it (its own temporary names only: its
    directory is shared, with the current directory say, and another run may be writing its own file)."""
    return remove_stale_temps(path.parent, [glob.escape(path.name)])


def parse_temp(name: str) -> tuple[str, int, int | None] | None:
    """(NAME, PID, START) of a temporary name (`temp_name`'s `.NAME.tmp-PID-START-N`, or an older
    `-PID-START` or `-PID`); None for any other name."""
    match = TEMP_NAME.fullmatch(name)
    return (match[1], int(match[2]), match[3] and int(match[3])) if match else None


def writer_gone(pid: int, start: int | None) -> bool:
    """Has the process that wrote under a temporary name of (pid, start) gone: no such process (or a
    zombie), or one started at another time than the writer (its pid reused)?"""
    reused = bool(start) and storage.process_start(pid) not in (0, start)
    return not alive(pid) or reused


def _stale(pid: int, start: int | None) -> bool:
    """Left by a process that is gone (`writer_gone`); this process's own temporaries are stale too (it is
    only starting)."""
    return pid == os.getpid() or writer_gone(pid, start)


def _linked_below(directory: Path, where: Path) -> bool:
    """Is a folder between `directory` and `where` a symbolic link (which could lead anywhere)?"""
    return any(p.is_symlink() for p in [where, *where.parents] if directory in p.parents)


def alive(pid: int) -> bool:
    """A process of this pid runs on this machine (another user's too): the one liveness check of writers
    (temporary names, leases). A zombie is dead: it has ended, only its parent has not reaped it yet (a
    group killed at once leaves its workers so for seconds), and `kill(pid, 0)` still succeeds on it."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:  # another user's process (PermissionError)
        pass
    found = storage.process_stat(pid)
    return found is None or found[0] not in ("Z", "X")  # X: dead, being removed from the table
