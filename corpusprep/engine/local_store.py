"""This machine's file system, the `file` row of the storage seam's `STORES` (plain paths and `file://`
URLs): pathlib, os and pyarrow on local paths, atomic writes by a temporary name in the same directory. And
`PrivateDir`, a folder one user's code keeps to itself, handled without following a link.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob as globlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISLNK, S_ISREG
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
                                f"({limit:,})")
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


class PrivateDir:
    """A folder of this user's that only the code that made it writes (the trainer's shard cache), on this
    machine: made here (mode 0700, a mode never changed after) or found so, owned by this user and holding
    the owner's `record` (or nothing yet: being made); entered through a descriptor opened without following
    a link, and every entry handled by name relative to it, never through a link (lstat semantics: a link
    is an entry like any other, never what it points at). Anything else is one line, nothing touched:
    `what` names the folder's owner in it ("the shard cache"), `advice` what to do instead."""

    def __init__(self, root: Path, name: str, record: str, what: str, advice: str) -> None:
        self.path, self.record = Path(root) / name, record
        self._what, self._advice = what, advice
        self._lock = threading.Lock()  # flock does not exclude two threads of one open descriptor
        os.makedirs(root, exist_ok=True)  # the user's own folder (or the system's temporary one)
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=root_fd)
            try:
                self.fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                  dir_fd=root_fd)
            except OSError as error:
                if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                if S_ISLNK(os.stat(name, dir_fd=root_fd, follow_symlinks=False).st_mode):
                    raise UsageError(f"{self.path}: a symbolic link, not {what}'s folder; corpusprep follows "
                                     f"no link there (remove it, or {advice})") from None
                raise UsageError(f"{self.path}: not a folder; remove it, or {advice}") from None
        finally:
            os.close(root_fd)
        try:
            self._check()
        except BaseException:
            os.close(self.fd)
            raise

    def _check(self) -> None:
        st = os.fstat(self.fd)
        if st.st_uid != os.getuid():
            raise UsageError(f"{self.path}: belongs to another user (uid {st.st_uid}), not {self._what}'s "
                             f"folder; {self._advice}")
        if st.st_mode & 0o077:  # others may write into it: not one made here (a mode is never changed)
            self._foreign(f"mode {st.st_mode & 0o777:o}")

    def _foreign(self, why: str) -> None:
        raise UsageError(f"{self.path}: not a folder {self._what} made ({why}); remove it, or {self._advice}")

    def claim(self, record: bytes) -> None:
        """Hold the folder's record: the one there, or `record` written now into a folder still empty (just
        made, here or by a process racing this one); a folder holding files but no record is refused."""
        with self.locked():
            found = self.lstat(self.record)
            if found is not None and not S_ISREG(found.st_mode):
                self._foreign(f"{self.record} is no file")
            if found is None:
                if [n for n in self.names() if n != self._new_record]:
                    self._foreign(f"files, but no {self.record}")
                self.write_record(record)

    @property
    def _new_record(self) -> str:
        return f".{self.record}.new"  # the record being replaced: a name only the owner writes, locked

    def write_record(self, data: bytes) -> None:
        """Replace the record with `data` in one step (call it holding the lock)."""
        if (left := self.lstat(self._new_record)) is not None and S_ISREG(left.st_mode):
            self.remove(self._new_record)  # a record write that was killed
        with self.create(self._new_record) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        self.replace(self._new_record, self.record)

    def close(self) -> None:
        os.close(self.fd)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """This folder to oneself: other threads, processes and caches over it wait (flock on it)."""
        with self._lock:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self.fd, fcntl.LOCK_UN)

    def lstat(self, name: str) -> os.stat_result | None:
        """The entry `name` itself (a link: the link), None when there is none."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def names(self) -> list[str]:
        return sorted(os.listdir(self.fd))

    def create(self, name: str) -> IO:
        """A new regular file (never a name that exists, never through a link), open to write."""
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=self.fd)
        return os.fdopen(fd, "wb")

    def open_read(self, name: str) -> IO:
        """A regular file to read: a link, a FIFO or a device is FileNotFoundError (no file of the folder)."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise FileNotFoundError(errno.ENOENT, "a link, not a file", str(self.path / name)) from None
            raise
        if not S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise FileNotFoundError(errno.ENOENT, "not a regular file", str(self.path / name))
        return os.fdopen(fd, "rb")

    def link(self, source: str, target: str) -> bool:
        """Give the file `source` the name `target` too, unless `target` exists (False): never replaces."""
        try:
            os.link(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
        except FileExistsError:
            return False
        return True

    def replace(self, source: str, target: str) -> None:
        os.replace(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def remove(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def touch(self, name: str) -> None:
        """Set the entry's modification time to now (a link's own, never its target's)."""
        os.utime(name, dir_fd=self.fd, follow_symlinks=False)
