"""A bounded local cache of shard files read from an object store (`--shards s3://bucket/shards`).

Each file is fetched once through the storage seam into the cache directory, hashed as it streams, and put
under its final name only when its sha256 is the manifest's: a mismatch is one line naming the URL and the
file is not used. A cached file is named by that sha256 (`<sha256>.parquet`), whichever URL or run it came
from: a later run (a `--resume` after a crash) reuses it without fetching, and a wiped cache is fetched again.
A file this process did not fetch is hashed once before its first use (a local read, far cheaper than the
fetch): one damaged on disk since is fetched again. The directory must be this user's, and is made writable
by this user alone. The reader memory-maps the local copy
as it maps a local shard.

The cache holds at most `max_bytes` (least recently used files go first), never evicting the file a reader
has open nor the ones being prefetched: a bound smaller than one shard keeps just the file in use. When a
reader opens a file, the next files of its order are fetched in one background thread (at most `ahead`, and
only those that fit the bound), so that the fetch overlaps training. DataLoader workers each have their own
cache object over the same directory (renames are atomic, a file removed under another's memory map stays
readable to it), so the bound holds per process.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.manifest import sha256_file
from corpusprep.errors import DataError, UsageError

BLOCK = 1 << 20


def default_directory() -> Path:
    """The cache directory when `data.cache_dir` is not set: this user's, in the system's temporary directory
    (a local disk, shared by this user's runs: files are named by content)."""
    return Path(tempfile.gettempdir()) / f"corpusprep-shards-{os.getuid()}"


class ShardCache:
    def __init__(self, directory: str | Path, max_bytes: int, ahead: int):
        self.directory, self.max_bytes, self.ahead = Path(directory), max_bytes, ahead
        self.fetched = 0  # files this process fetched (tests and logs: how often the bound evicted)
        self._start()

    def _start(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[Future, int]] = {}  # sha256 -> (its fetch, its size)
        self._in_use: dict[str, int] = {}  # sha256 -> size of the files readers have open
        self._pool: ThreadPoolExecutor | None = None
        self._checked = False
        self._verified: set[str] = set()  # sha256s of the cached files this process fetched or hashed

    def __getstate__(self) -> dict:  # to DataLoader workers: the settings, not the thread or the futures
        return {"directory": self.directory, "max_bytes": self.max_bytes, "ahead": self.ahead, "fetched": 0}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._start()

    def path(self, sha256: str, suffix: str = ".parquet") -> Path:
        return self.directory / f"{sha256}{suffix}"

    def local(self, url: Any, sha256: str, size: int | None, suffix: str = ".parquet") -> Path:
        """The verified local copy of `url` (fetched now unless cached or being prefetched), marked in use
        until `release`: eviction leaves it alone."""
        with self._lock:
            self._in_use[sha256] = size or 0
            pending = self._pending.get(sha256)
        if pending is not None:
            pending[0].result()  # a failed prefetch (a bad sha256) fails here, in the reader, in one line
        return self._ensure(url, sha256, size, suffix)

    def release(self, sha256: str) -> None:
        with self._lock:
            self._in_use.pop(sha256, None)

    def prefetch(self, files: list[tuple[Any, str, int]]) -> None:
        """Fetch (url, sha256, size) in the background, in order: at most `ahead`, within the bound."""
        with self._lock:
            room = self.max_bytes - sum(self._in_use.values()) - sum(s for _, s in self._pending.values())
            for url, sha256, size in files[: self.ahead]:
                if sha256 in self._pending or sha256 in self._in_use or self.path(sha256).is_file():
                    continue
                if size > room:
                    break  # the next file would evict one in use or about to be: read it when its turn comes
                room -= size
                self._pool = self._pool or ThreadPoolExecutor(1, thread_name_prefix="shard-prefetch")
                future = self._pool.submit(self._ensure, url, sha256, size, ".parquet")
                self._pending[sha256] = (future, size)
                future.add_done_callback(lambda _, key=sha256: self._done(key))

    def close(self) -> None:
        """Wait for the fetches under way (a reader that stops early leaves none running)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _done(self, sha256: str) -> None:
        with self._lock:
            self._pending.pop(sha256, None)

    def _ensure(self, url: Any, sha256: str, size: int | None, suffix: str) -> Path:
        self._check_directory()
        target = self.path(sha256, suffix)
        try:
            if (size is None or storage.stat(target).st_size == size) and self._intact(target, sha256):
                os.utime(target)  # most recently used
                return target
        except FileNotFoundError:  # not cached, or evicted by another process just now
            pass
        self._fetch(url, sha256, target)
        self.evict(keep=sha256)
        return target

    def _check_directory(self) -> None:
        """A file in the cache is trusted as verified by its name, so no one else may put one there: the
        directory is made this user's alone (group and others cannot write), one line if another owns it."""
        if self._checked:
            return
        storage.makedirs(self.directory)
        st = os.stat(self.directory)
        if st.st_uid != os.getuid():
            raise UsageError(f"{self.directory}: the shard cache belongs to another user (uid {st.st_uid}); "
                             "set data.cache_dir to a directory of yours")  # fmt: skip
        if st.st_mode & 0o022:
            os.chmod(self.directory, st.st_mode & ~0o022)
        self._checked = True

    def _fetch(self, url: Any, sha256: str, target: Path) -> None:
        digest = hashlib.sha256()
        with storage.atomic_open(target, "wb") as out, storage.open_file(url, "rb") as source:
            while block := source.read(BLOCK):
                digest.update(block)
                out.write(block)
            if digest.hexdigest() != sha256:  # raised inside the block: the temporary file is removed
                raise DataError(f"{storage.url(url)}: sha256 {digest.hexdigest()[:12]}... but the manifest "
                                f"says {sha256[:12]}...; the file is not used")  # fmt: skip
        with self._lock:
            self.fetched += 1
            self._verified.add(sha256)

    def _intact(self, target: Path, sha256: str) -> bool:
        """Whether a cached file holds what its name says: hashed once a process (a file another run left is
        untrusted until then); a damaged one is removed, and fetched again."""
        if sha256 in self._verified:
            return True
        if sha256_file(target) != sha256:
            storage.remove(target, missing_ok=True)
            return False
        with self._lock:
            self._verified.add(sha256)
        return True

    def _cached(self) -> list[tuple[Path, int]]:
        found = []
        for path in storage.glob(self.directory, "*.parquet") if self.directory.is_dir() else []:
            try:
                found.append((path, storage.stat(path).st_size))
            except FileNotFoundError:  # evicted by another process meanwhile
                continue
        return found

    def evict(self, keep: str = "") -> None:
        """Remove least recently used files until the cache holds at most `max_bytes`; never one in use,
        being prefetched, or `keep`."""
        with self._lock:
            protected = {*self._in_use, *self._pending, keep}
        files = self._cached()
        total = sum(size for _, size in files)
        for path, size in sorted(files, key=lambda item: _used(item[0])):
            if total <= self.max_bytes:
                return
            if path.stem not in protected:
                storage.remove(path, missing_ok=True)
                total -= size


def _used(path: Path) -> int:
    try:
        return storage.stat(path).st_mtime_ns
    except FileNotFoundError:
        return 0
