"""Atomic output files and JSON helpers: a file appears under its final name complete, or not at all."""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.storage import atomic_dir, atomic_path, fsync_dir, temp_name

__all__ = ["atomic_dir", "atomic_path", "fsync_dir", "read_json", "remove_stale_temps",
           "remove_stale_temps_of", "temp_name", "write_json"]  # fmt: skip


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON atomically, with sorted keys so equal content gives equal bytes."""
    storage.write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path) -> Any:
    """JSON this process wrote itself, read back (tests). Anything else read back from disk is untrusted
    and goes through `corpusprep.engine.records.load_record`, against its schema."""
    return json.loads(storage.read_text(path))


def remove_stale_temps(directory: str | Path, names: Iterable[str]) -> int:
    """Remove what killed writes left under `directory`: the temporary names (`.NAME.tmp-PID`, temp_name) of
    the files and directories named by `names` (relative paths, fnmatch patterns: an output's own files),
    in the folders where they are written, and of no process alive but this one. Never a walk of the
    whole tree: a user's folder beside an output may hold names of this shape, and they are not ours."""
    directory = Path(directory)
    patterns = list(names)
    removed = 0
    for folder in sorted({p.rpartition("/")[0] for p in patterns}):
        for where in [directory] if not folder else storage.glob(directory, folder):
            linked = where.is_symlink() or (folder and _linked_below(directory, where))
            if linked or not storage.is_dir(where):
                continue
            prefix = f"{where.relative_to(directory).as_posix()}/" if where != directory else ""
            for tmp in storage.glob(where, ".*.tmp-*"):
                match = _TEMP.fullmatch(tmp.name)
                if match and _stale(int(match[2])) and any(
                    fnmatch.fnmatchcase(prefix + match[1], p) for p in patterns
                ):
                    storage.remove_tree(tmp)
                    removed += 1
    return removed


def remove_stale_temps_of(path: Path) -> int:
    """Remove what killed writes of the one file `path` left beside it (its own temporary names only: its
    directory is shared, with the current directory say, and another run may be writing its own file)."""
    return remove_stale_temps(path.parent, [glob.escape(path.name)])


_TEMP = re.compile(r"\.(.+)\.tmp-(\d{1,9})")  # temp_name's shape: `.NAME.tmp-PID`


def _stale(pid: int) -> bool:
    return pid == os.getpid() or not alive(pid)


def _linked_below(directory: Path, where: Path) -> bool:
    """Is a folder between `directory` and `where` a symbolic link (which could lead anywhere)?"""
    return any(p.is_symlink() for p in [where, *where.parents] if directory in p.parents)


def alive(pid: int) -> bool:
    """A process of this pid runs on this machine (another user's too)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:  # another user's process (PermissionError)
        return True
    return True
