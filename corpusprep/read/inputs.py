"""Input arguments (files, directories, globs) -> a sorted list of files, each with a stable source name."""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from corpusprep.errors import InputError

MARKER_SUFFIX = ".done.json"  # engine completion markers; temp files and locks are hidden (".name")
log = logging.getLogger("corpusprep.read")
_warned: set[str] = set()


def printable_source(source: str) -> str:
    """`source` with the bytes of a file name that is not valid UTF-8 (which Python keeps as surrogates) as
    \\xNN escapes: document ids must be UTF-8 to be hashed and written. Warns once per name."""
    try:
        source.encode("utf-8")
        return source
    except UnicodeEncodeError:
        escaped = source.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        if escaped not in _warned:
            _warned.add(escaped)
            log.warning(f"{escaped}: file name is not valid UTF-8; read, its document ids escaped as here")
        return escaped


def _wanted(name: str) -> bool:
    return not name.startswith(".") and not name.endswith(MARKER_SUFFIX)


def _walk(root: Path) -> Iterator[Path]:
    from corpusprep.engine.artifact import is_artifact_dir

    if is_artifact_dir(root):
        raise InputError(f"{root}: a corpusprep output (vocab, pairs, shards...), not a corpus")
    for directory, subdirs, files in os.walk(root):
        # prune hidden trees and corpusprep's own outputs: a run never reads its (or another run's) output
        subdirs[:] = [d for d in subdirs if not d.startswith(".") and not is_artifact_dir(Path(directory, d))]
        for name in files:
            # regular files only: a FIFO or a device would block the reader forever
            if _wanted(name) and Path(directory, name).is_file():
                yield Path(directory, name)


def _glob_base(pattern: str) -> Path:
    """The leading directories of a glob that contain no wildcard: ids are relative to it."""
    parts = []
    for part in Path(pattern).parts[:-1]:
        if glob.has_magic(part):
            break
        parts.append(part)
    return Path(*parts) if parts else Path(".")


def resolve_inputs(inputs: Sequence[str | Path]) -> list[tuple[Path, str]]:
    """Files to read as (path, source) in a deterministic order: arguments in the given order, each
    directory or glob sorted by relative path. `source` is the path relative to the argument (a file
    argument: its name), so document ids do not depend on where the corpus lives. A file reached twice is
    read once. Raises InputError for a missing path or a directory/glob without files."""
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    if not inputs:
        raise InputError("no input paths given")
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for arg in inputs:
        path = Path(arg)
        if path.is_file():
            files = [(path, path.name)]
        elif path.is_dir():
            files = [(p, p.relative_to(path).as_posix()) for p in _walk(path)]
            if not files:
                raise InputError(f"{path}: directory has no input files (hidden files are ignored)")
        elif glob.has_magic(str(arg)):
            base = _glob_base(str(arg))
            files = []
            for match in map(Path, glob.glob(str(arg), recursive=True)):
                if match.is_dir():
                    files += [(p, p.relative_to(base).as_posix()) for p in _walk(match)]
                elif match.is_file() and _wanted(match.name):
                    files.append((match, match.relative_to(base).as_posix()))
            if not files:
                raise InputError(f"{arg}: no files match this pattern")
        elif path.exists():
            raise InputError(f"{path}: not a regular file or directory")
        else:
            raise InputError(f"{path}: no such file or directory")
        for file, source in sorted(files, key=lambda item: item[1]):
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                found.append((file, printable_source(source)))
    return found
