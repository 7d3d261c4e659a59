"""This machine's file system, the `file` row of the storage seam's `STORES` (plain paths and `file://`
URLs): pathlib, os and pyarrow on local paths, atomic writes by a temporary name in the same directory.
"""

from __future__ import annotations

import contextlib
import glob as globlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISREG
from typing import IO, TYPE_CHECKING, Any

from corpusprep.engine.storage import STORES, Store, fsync_dir, temp_name
from corpusprep.engine.urls import bare_scheme, unwrap
from corpusprep.errors import CorpusprepError, DataError, UsageError, os_error_in

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq


class LocalStore(Store):
    """This machine's file system: pathlib, os and pyarrow on local paths; atomic writes by a temporary name
    in the same directory (`temp_name`), fsync, then `os.replace`."""

    def local(self, path: Any) -> Path:
        return Path(unwrap(path))

    def output(self, path: Any) -> Path:
        """`path` to write to; never a folder named like a store's scheme: `-o s3://` (no bucket), which
        pathlib folds into a relative `s3:`, is one line."""
        local = self.local(path)
        bare = bare_scheme(local.parts[0]) if local.parts else None
        if bare is not None and bare != "file" and bare in STORES:
            raise UsageError(f"{bare}://: no bucket name ({bare}://BUCKET/KEY)")
        return local

    def resolve(self, path: Any) -> Path:
        return self.local(path).resolve()

    def open(self, path: Any, mode: str = "rb", **kwargs: Any) -> IO:
        return open(self.output(path) if any(c in mode for c in "wax+") else self.local(path), mode, **kwargs)

    def put_file(self, local: Path, path: Any) -> None:
        with self.atomic_path(path) as tmp:
            shutil.copyfile(local, tmp)

    def list(self, path: Any) -> list[Path]:
        return sorted(self.local(path).iterdir())

    def glob(self, path: Any, pattern: str) -> list[Path]:
        return sorted(self.local(path).glob(pattern))

    def match(self, pattern: str) -> list[Path]:
        # the pattern as given (a Path would drop a trailing `/`, which makes `**/` match directories only)
        return sorted(map(Path, globlib.glob(unwrap(pattern), recursive=True)))

    def entries(self, path: Any) -> tuple[list[str], list[str]]:
        with os.scandir(self.local(path)) as found:
            dirs, files = [], []
            for entry in found:
                (dirs if entry.is_dir() else files).append(entry.name)
        return dirs, files

    def walk(self, path: Any) -> Iterator[tuple[Path, list[str], list[str]]]:
        for directory, dirs, files in os.walk(self.local(path)):
            yield Path(directory), dirs, files

    def rglob(self, path: Any, pattern: str) -> list[Path]:
        return sorted(self.local(path).rglob(pattern))

    def stat(self, path: Any) -> os.stat_result:
        return self.local(path).stat()

    def read_bounded(self, path: Any, limit: int) -> bytes:
        """Never a FIFO or a device: opened without blocking, then checked to be a regular file."""
        fd = os.open(self.local(path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not S_ISREG(st.st_mode):
                raise DataError(f"{path}: not a regular file")
            if st.st_size > limit:
                raise DataError(f"{path}: {st.st_size:,} bytes, more than a record corpusprep reads "
                                f"({limit:,})")  # fmt: skip
            with os.fdopen(fd, "rb", closefd=False) as f:
                return f.read(limit + 1)
        finally:
            os.close(fd)

    def is_dir(self, path: Any) -> bool:
        return self.local(path).is_dir()

    def is_file(self, path: Any) -> bool:
        return self.local(path).is_file()

    def exists(self, path: Any) -> bool:
        return self.local(path).exists()

    def makedirs(self, path: Any) -> None:
        self.output(path).mkdir(parents=True, exist_ok=True)

    def replace(self, source: Any, target: Any) -> None:
        os.replace(self.output(source), self.output(target))

    def remove(self, path: Any, missing_ok: bool = False) -> None:
        self.output(path).unlink(missing_ok=missing_ok)

    def remove_tree(self, path: Any) -> None:
        path = self.output(path)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def rmdir(self, path: Any) -> None:
        self.output(path).rmdir()

    @contextlib.contextmanager
    def atomic_path(self, path: Any) -> Iterator[Path]:
        path = self.output(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_name(path)
        self.remove_tree(tmp)  # a name left there (a link planted to redirect the write) is never used
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

    @contextlib.contextmanager
    def atomic_dir(self, path: Any) -> Iterator[Path]:
        path = self.output(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_name(path)
        self.remove_tree(tmp)
        tmp.mkdir()
        try:
            yield tmp
            fsync_dir(tmp)
            if path.exists() or path.is_symlink():  # a rerun of the same write after a crash that followed
                self.remove_tree(path)  # the rename (a link there: the link goes, never what it points at)
            os.replace(tmp, path)
            fsync_dir(path.parent)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def parquet_file(self, path: Any, **kwargs: Any) -> pq.ParquetFile:
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.local(path), **kwargs)

    def read_table(self, path: Any, **kwargs: Any) -> pa.Table:
        import pyarrow.parquet as pq

        return pq.read_table(self.local(path), **kwargs)
