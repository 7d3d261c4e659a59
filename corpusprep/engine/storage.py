"""The storage seam: the one module through which corpusprep lists, opens, writes, renames, removes and stats
files, so that another file system is one module and one row in `STORES`.

A path is resolved to its store by its URL scheme (`store_for`; how a URL is read, shown and checked:
engine/urls.py): a plain path or `file://` is `LocalStore` (engine/local_store.py), another scheme is looked
up in `STORES` ("module:class", imported on first use, like the engines' `ENGINES`), and a scheme not in the
table is one line naming the path. Stage code calls the module's
functions (`open_file`, `write_bytes`, `atomic_path`, `glob`, `replace`, `parquet_file`, ...), which
dispatch on the path; it never opens, lists, writes, renames or removes with pathlib, os, shutil or pyarrow
itself (tests/architecture/test_storage_calls.py counts what is left; path checks such as `is_file` or
`resolve` are not counted yet).

Writes are atomic: a file appears under its final name complete or not at all. `atomic_path` and
`atomic_dir` hand the writer a *local* temporary path (the one thing pyarrow, safetensors and tokenizers all
accept) and put it in place on success: `LocalStore` writes it beside the final name and renames it (fsync
first); a store without rename (an object store) inherits `Store.atomic_path`, which stages the file in a
local temporary directory and uploads it with `put_file`, an object store's atomic write. Readers get a
file object (`open_file`) or, for Parquet, a `pyarrow.parquet.ParquetFile` (`parquet_file`), from a local
path where there is one (memory-mapped reads and pyarrow's own I/O stay as they were), else from the file
object the store opens.

Every path the seam is handed raises the audit event `corpusprep.storage` (PEP 578, `sys.addaudithook`) with
the path as given: what a process reads, writes or lists can be watched from outside the code (the multi-node
rehearsal, tests/test_cluster_recipe.py, uses it to check that no task touches another node's files). With no
hook installed the event costs next to nothing.

Listings (`list_dir`, `glob`, `rglob`) are sorted, so whatever walks them does so in one order on every
machine; like pathlib's, a recursive glob descends into no linked folder.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import shutil
import sys
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from corpusprep.engine.urls import scheme_of, url
from corpusprep.errors import DataError, UsageError, printable

if TYPE_CHECKING:  # pyarrow is imported where Parquet is read or written: the CLI and records stay light
    import pyarrow as pa
    import pyarrow.parquet as pq

# scheme -> "module:class" of its Store, imported on first use; a plain path (no scheme) is the local store
STORES: dict[str, str] = {
    "file": "corpusprep.engine.local_store:LocalStore",
    # object stores through fsspec (engine/fsspec_store.py): s3fs, gcsfs (`gcs://` is gcsfs' other name)
    "s3": "corpusprep.engine.fsspec_store:FsspecStore",
    "gs": "corpusprep.engine.fsspec_store:FsspecStore",
    "gcs": "corpusprep.engine.fsspec_store:FsspecStore",
}
_LOADED: dict[str, Store] = {}


def store_for(path: str | os.PathLike) -> Store:
    """The store that holds `path`; a scheme without a store in `STORES` is one line naming the path."""
    sys.audit("corpusprep.storage", os.fspath(path))
    scheme = scheme_of(path) or "file"
    if scheme not in _LOADED:
        if scheme not in STORES:
            known = ", ".join(f"{s}://" for s in sorted(STORES))
            raise UsageError(f"{printable(os.fspath(path))}: no storage for the scheme {scheme}:// (known: "
                             f"{known} and plain paths)")
        module, _, name = STORES[scheme].partition(":")
        _LOADED[scheme] = getattr(importlib.import_module(module), name)()
    return _LOADED[scheme]


def local_path(path: str | os.PathLike) -> Path:
    """`path` as a path on this machine's file system (a `file://` URL unwrapped); one line for a path of
    another store (a lock, a memory map, a subprocess need a local file)."""
    local = store_for(path).local(path)
    if local is None:
        raise UsageError(f"{printable(os.fspath(path))}: needs a local file system here")
    return local


class Store(ABC):
    """A file system. A backend implements the primitives; the atomic writes and the Parquet readers have
    portable defaults (stage in a local temporary file, upload with `put_file`; read through `open`) that
    a store with rename and local paths (`LocalStore`) overrides."""

    @abstractmethod
    def open(self, path: Any, mode: str = "rb", **kwargs: Any) -> IO:
        """A file object: read ("rb", "r") or append ("ab", "a"); a whole new file is `atomic_path`'s."""

    @abstractmethod
    def put_file(self, local: Path, path: Any) -> None:
        """Put the local file `local` at `path` in one step: readers see the old file or the new one."""

    @abstractmethod
    def list(self, path: Any) -> list:
        """The entries of the directory `path`, sorted."""

    @abstractmethod
    def glob(self, path: Any, pattern: str) -> list:
        """The paths under `path` matching `pattern` (pathlib's syntax, `**` included), sorted."""

    @abstractmethod
    def stat(self, path: Any) -> os.stat_result:
        """At least `st_size` and `st_mtime_ns` of a file (FileNotFoundError if there is none)."""

    def read_bounded(self, path: Any, limit: int) -> bytes:
        """A regular file's bytes, refused (one DataError line) when larger than `limit`."""
        size = self.stat(path).st_size
        if size > limit:
            raise DataError(f"{path}: {size:,} bytes, more than a record corpusprep reads ({limit:,})")
        with self.open(path, "rb") as f:
            return f.read(limit + 1)

    def read_range(self, path: Any, offset: int, length: int) -> bytes:
        """`length` bytes of a file from `offset` (fewer at its end)."""
        with self.open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    @abstractmethod
    def is_dir(self, path: Any) -> bool: ...

    @abstractmethod
    def is_file(self, path: Any) -> bool: ...

    def exists(self, path: Any) -> bool:
        """A file or a directory (on an object store: an object, or a prefix with objects under it)."""
        return self.is_file(path) or self.is_dir(path)

    @abstractmethod
    def makedirs(self, path: Any) -> None:
        """Make the directory `path` and its parents; nothing if it exists."""

    @abstractmethod
    def replace(self, source: Any, target: Any) -> None:
        """Move `source` to `target`, replacing a file there."""

    @abstractmethod
    def remove(self, path: Any, missing_ok: bool = False) -> None:
        """Remove one file (a link: the link, never what it points to)."""

    @abstractmethod
    def remove_tree(self, path: Any) -> None:
        """Remove a file, a link or a directory tree, whichever `path` is; nothing if there is none."""

    @abstractmethod
    def rmdir(self, path: Any) -> None:
        """Remove an empty directory."""

    def local(self, path: Any) -> Path | None:
        """`path` on this machine's file system, or None (the default: a remote store)."""
        return None

    def create_exclusive(self, path: Any, data: bytes) -> str:
        """Write a new object only where none is, in one request; its content tag. FileExistsError when
        one is there. A store without conditional writes has no lease (engine/lock.py)."""
        raise UsageError(f"{printable(url(path))}: this storage has no conditional write, so no writer's "
                         "lease; write to a local path or s3://")

    def read_tagged(self, path: Any, limit: int) -> tuple[bytes, str]:
        """(bytes, content tag) of one object, of one version of it; FileExistsError when it changed while
        read."""
        raise UsageError(f"{printable(url(path))}: this storage has no content tags")

    def replace_if(self, path: Any, data: bytes, tag: str) -> str:
        """Replace the object at `path` only while its content tag is `tag`; the new tag. FileExistsError
        when another write came between."""
        raise UsageError(f"{printable(url(path))}: this storage has no conditional write")

    def resolve(self, path: Any) -> Path:
        """The one name of `path` (two names of one file compare equal): a URL has no links or relative
        parts, so the path itself (pathlib's folded form)."""
        return Path(os.fspath(path))

    def entries(self, path: Any) -> tuple[list[str], list[str]]:
        """(names of the subdirectories, names of the other entries) of the directory `path`."""
        found = self.list(path)
        dirs = [str(p).rstrip("/").rpartition("/")[2] for p in found if self.is_dir(p)]
        return dirs, [str(p).rstrip("/").rpartition("/")[2] for p in found if not self.is_dir(p)]

    def walk(self, path: Any) -> Iterator[tuple[Any, list[str], list[str]]]:
        """os.walk's shape, top-down: prune a tree by removing its name from the yielded subdirectories."""
        dirs, files = self.entries(path)
        yield path, dirs, files
        for name in dirs:
            yield from self.walk(join(path, name))

    def match(self, pattern: str) -> list:
        """The paths matching a whole pattern (`**`: any depth), sorted."""
        raise UsageError(f"{printable(pattern)}: this storage has no wildcards; name the directory instead")

    def rglob(self, path: Any, pattern: str) -> list:
        return self.glob(path, f"**/{pattern}")

    @contextlib.contextmanager
    def atomic_path(self, path: Any) -> Iterator[Path]:
        with tempfile.TemporaryDirectory(prefix=".corpusprep-") as staging:
            tmp = Path(staging) / "file"
            yield tmp
            self.put_file(tmp, path)

    @contextlib.contextmanager
    def atomic_dir(self, path: Any) -> Iterator[Path]:
        """A store without rename puts the files one by one: a reader must wait for the last (a checkpoint's
        `config.json`, written last, says it is whole)."""
        with tempfile.TemporaryDirectory(prefix=".corpusprep-") as staging:
            yield Path(staging)
            self.remove_tree(path)
            files = sorted(p for p in Path(staging).rglob("*") if p.is_file())
            for file in sorted(files, key=lambda p: p.name == "config.json"):
                self.put_file(file, join(path, file.relative_to(staging).as_posix()))

    def parquet_file(self, path: Any, **kwargs: Any) -> pq.ParquetFile:
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.open(path, "rb"), **kwargs)

    def read_table(self, path: Any, **kwargs: Any) -> pa.Table:
        import pyarrow.parquet as pq

        with self.open(path, "rb") as f:
            return pq.read_table(f, **kwargs)


def join(path: Any, name: str) -> Any:
    """`path / name` for a Path, a URL string joined with `/`."""
    return path / name if isinstance(path, Path) else f"{str(path).rstrip('/')}/{name}"


def temp_name(path: Path) -> Path:
    """The temporary name a file is written under before it is renamed into place (same directory):
    `.NAME.tmp-PID-START-N`, the writer's pid and start time (`process_start`), so that a later run tells a
    killed writer's leftovers from a live writer's even once the pid is reused (pid_max is often 32768), and
    N, this process's count of such names, so that two threads writing one file never share one."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{process_start(os.getpid())}-{next(_TEMP_SERIAL)}")


_TEMP_SERIAL = itertools.count()  # next() on it is atomic in CPython: no two threads draw one N


def process_start(pid: int) -> int:
    """When process `pid` started, in clock ticks since boot (Linux's /proc/PID/stat, field 22); 0 where
    that is not known (another system, or no such process)."""
    found = process_stat(pid)
    return found[1] if found else 0


def process_stat(pid: int) -> tuple[str, int] | None:
    """(state, start) of process `pid` from Linux's /proc/PID/stat: its state letter (`R`, `S`, ..., `Z` a
    zombie: killed or ended, not yet reaped by its parent) and its start time in clock ticks since boot;
    None where that is not known (another system, or no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2 :].split()  # the command name, in parentheses, may hold spaces
        return fields[0].decode(), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def fsync_file(path: str | os.PathLike) -> None:
    """Flush a local file (one a library wrote into `atomic_dir`'s directory) to disk."""
    with open(local_path(path), "rb") as f:
        os.fsync(f.fileno())


def fsync_dir(path: str | os.PathLike) -> None:
    """Flush a local directory's entries (a rename into it) to disk."""
    fd = os.open(local_path(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- what stage code calls: each resolves the path's store --------------------------------------------------


def open_file(path: str | os.PathLike, mode: str = "rb", **kwargs: Any) -> IO:
    """A file object to read (or append to: a log); a new file is written with `atomic_path`."""
    return store_for(path).open(path, mode, **kwargs)


def read_bytes(path: str | os.PathLike) -> bytes:
    with open_file(path, "rb") as f:
        return f.read()


def read_bounded(path: str | os.PathLike, limit: int) -> bytes:
    """A regular file's bytes (never a FIFO or a device), one DataError line when larger than `limit`."""
    return store_for(path).read_bounded(path, limit)


def read_range(path: str | os.PathLike, offset: int, length: int) -> bytes:
    """`length` bytes of a file from `offset`: on an object store one ranged request of just those bytes."""
    return store_for(path).read_range(path, offset, length)


def read_text(path: str | os.PathLike, encoding: str | None = None, errors: str | None = None) -> str:
    with open_file(path, "r", encoding=encoding, errors=errors) as f:
        return f.read()


def atomic_path(path: str | os.PathLike) -> contextlib.AbstractContextManager[Path]:
    """Yield a local temporary path to write; on success it becomes `path` in one step, on failure it is
    removed, so `path` is the old file, the new one, or absent; never a part."""
    return store_for(path).atomic_path(path)


def atomic_dir(path: str | os.PathLike) -> contextlib.AbstractContextManager[Path]:
    """Yield a local temporary directory to fill; on success it replaces `path` (an older one removed), on
    failure (a full disk, a kill's cleanup) it is removed, so `path` is always complete or absent."""
    return store_for(path).atomic_dir(path)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", **kwargs: Any) -> Iterator[IO]:
    """`open(mode, **kwargs)` on `atomic_path(path)`: the file appears at `path` when the block ends."""
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as f:
        yield f


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write a whole file atomically (`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(
    path: str | os.PathLike, text: str, encoding: str | None = None, newline: str | None = None
) -> None:
    """Write a whole text file atomically (`atomic_path`); `encoding` and `newline` as `open`'s."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding=encoding, newline=newline) as f:
        f.write(text)


def copy_file(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Copy one file's bytes to `target`, atomically."""
    with atomic_path(target) as tmp, open_file(source, "rb") as src, open(tmp, "wb") as out:
        shutil.copyfileobj(src, out)


def list_dir(path: str | os.PathLike) -> list:
    """The entries of a directory, sorted."""
    return store_for(path).list(path)


def glob(path: str | os.PathLike, pattern: str) -> list:
    """The paths under `path` matching `pattern` (pathlib's syntax), sorted."""
    return store_for(path).glob(path, pattern)


def rglob(path: str | os.PathLike, pattern: str) -> list:
    """`glob(path, "**/" + pattern)`: every depth, no linked folder descended into, sorted."""
    return store_for(path).rglob(path, pattern)


def walk(path: str | os.PathLike) -> Iterator[tuple[Any, list[str], list[str]]]:
    """(directory, subdirectory names, other names) top-down, like os.walk: remove a name from the yielded
    subdirectories to leave its tree out."""
    return store_for(path).walk(path)


def entries(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """(subdirectory names, other names) of one directory, as `walk` lists them."""
    return store_for(path).entries(path)


def match(pattern: str | os.PathLike) -> list:
    """The paths matching a whole glob pattern (`**`: any depth), sorted."""
    return store_for(pattern).match(pattern)


def stat(path: str | os.PathLike) -> os.stat_result:
    return store_for(path).stat(path)


def resolve(path: str | os.PathLike) -> Path:
    """The absolute, link-free name of a local path; a URL as it is (pathlib's folded form)."""
    return store_for(path).resolve(path)


def is_dir(path: str | os.PathLike) -> bool:
    return store_for(path).is_dir(path)


def is_file(path: str | os.PathLike) -> bool:
    return store_for(path).is_file(path)


def exists(path: str | os.PathLike) -> bool:
    """A file or a directory is there (a link: what it points to)."""
    return store_for(path).exists(path)


def makedirs(path: str | os.PathLike) -> None:
    """Make a directory and its parents (nothing if it exists)."""
    store_for(path).makedirs(path)


def replace(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Rename `source` to `target` (one store), replacing a file there."""
    store = store_for(target)
    if store_for(source) is not store:
        raise UsageError(f"{printable(os.fspath(source))}: cannot be renamed to "
                         f"{printable(os.fspath(target))} on another store")
    store.replace(source, target)


def remove(path: str | os.PathLike, missing_ok: bool = False) -> None:
    """Remove one file or link."""
    store_for(path).remove(path, missing_ok=missing_ok)


def remove_tree(path: str | os.PathLike) -> None:
    """Remove a file, a link (never what it points to) or a directory tree; nothing if there is none."""
    store_for(path).remove_tree(path)


def rmdir(path: str | os.PathLike) -> None:
    """Remove an empty directory."""
    store_for(path).rmdir(path)


def parquet_file(path: str | os.PathLike, **kwargs: Any) -> pq.ParquetFile:
    """A Parquet file to read (its footer read now): pyarrow's own reader on a local path."""
    return store_for(path).parquet_file(path, **kwargs)


def read_table(path: str | os.PathLike, **kwargs: Any) -> pa.Table:
    """A whole Parquet file as a table."""
    return store_for(path).read_table(path, **kwargs)


def write_table(table: pa.Table, path: str | os.PathLike, **kwargs: Any) -> None:
    """Write a Parquet file atomically; `kwargs` are `pyarrow.parquet.write_table`'s."""
    import pyarrow.parquet as pq

    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **kwargs)


@contextlib.contextmanager
def parquet_writer(path: str | os.PathLike, schema: pa.Schema, **kwargs: Any) -> Iterator[pq.ParquetWriter]:
    """A `pyarrow.parquet.ParquetWriter` whose file appears at `path` atomically when the block ends."""
    import pyarrow.parquet as pq

    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema, **kwargs) as writer:
        yield writer
