"""A bounded local cache of shard files read from an object store (`--shards s3://bucket/shards`).

Each file is fetched once through the storage seam into the cache's folder, hashed as it streams, and kept
only when its sha256 is the manifest's: a mismatch is one line naming the URL and the file is not used. A
copy is found by that sha256 (its name `<sha256>.parquet`), whichever URL or run it came from: a later run
(a `--resume` after a crash) reuses it without fetching, and a wiped cache is fetched again. A copy this
process did not fetch is hashed once before its first use (a local read, far cheaper than the fetch): one
damaged on disk since is fetched again. The reader memory-maps the local copy as it maps a local shard.

The cache owns exactly what it wrote, under the rule every output follows (engine/artifact.py: a record
of the files it owns; nothing else is ever deleted or written over):
- its folder, `corpusprep-shard-cache-<uid>` inside `data.cache_dir` (default: the system's temporary
  directory), is one it made itself (mode 0700, never changed) and holds its record, `owned.json`; a link
  there (another user's, in a shared /tmp), a folder of another user's, one others may write into, or one
  holding files without such a record is refused in one line, nothing touched (`PrivateDir`: entered
  without following a link, its entries handled by name, by lstat);
- the record lists every file the cache created there: a copy by name, sha256 and identity (inode, size,
  modification and change times, as lstat gives them once it is in place: the cache never changes it
  after, so a file replaced or edited by hand, an inode number reused included, is another file), the
  temporary files of fetches under way by name and inode (`.NAME.tmp-PID-START-N`, the seam's temporary
  names); a copy is put under its name with a hard link, which never replaces what is there (a name taken
  by anything else: the next free `<sha256>.N.parquet`); when each copy was last used is in the record too;
- eviction, a damaged copy's removal and a killed fetch's cleanup remove only recorded names whose entry
  is still the recorded file: a user's file, a link or anything put there by hand is never deleted,
  followed or touched, and does not count against the bound.

The cache holds at most `max_bytes` (least recently used copies go first), never evicting the file a reader
has open nor the ones being prefetched: a bound smaller than one shard keeps just the file in use. When a
reader opens a file, the next files of its order are fetched in one background thread (at most `ahead`, and
only those that fit the bound), so that the fetch overlaps training. DataLoader workers each have their own
cache object over the same folder (the record is changed under a lock of the folder; a copy removed under
another's memory map stays readable to it), so the bound holds per process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from stat import S_ISREG
from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.files import parse_temp, writer_gone
from corpusprep.engine.local_store import PrivateDir
from corpusprep.engine.records import Int, ListOf, MapOf, Obj, RecordError, Str, parse_json
from corpusprep.errors import DataError

BLOCK = 1 << 20
RECORD = "owned.json"
_KIND = "corpusprep shard cache"
_COPY = r"[0-9a-f]{64}(\.[0-9]{1,6})?\.(parquet|txt)"  # `<sha256>[.N].suffix`: plain names, never a path
RECORD_SCHEMA = Obj({
    "kind": Str((_KIND,)),
    "files": MapOf(Obj({"sha256": Str(pattern="[0-9a-f]{64}"), "identity": ListOf(Int(), 4, 4),
                        "used": Int()}), key=Str(pattern=_COPY, what="a cached copy's name")),
    "writing": MapOf(Obj({"inode": Int()}),
                     key=Str(pattern=rf"\.{_COPY}\.tmp-\d+-\d+(-\d+)?", what="a fetch")),
})


def cache_folder() -> str:
    """The name of the cache's own folder inside its directory: this user's."""
    return f"corpusprep-shard-cache-{os.getuid()}"


def default_directory() -> Path:
    """Where the cache makes its folder when `data.cache_dir` is not set: the system's temporary directory
    (a local disk, shared by this user's runs: copies are found by content)."""
    return Path(tempfile.gettempdir())


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
        self._folder: PrivateDir | None = None
        self._pid = os.getpid()
        self._verified: set[str] = set()  # names of the copies this process fetched or hashed

    def __getstate__(self) -> dict:  # to DataLoader workers: the settings, not the thread or the futures
        return {"directory": self.directory, "max_bytes": self.max_bytes, "ahead": self.ahead, "fetched": 0}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._start()

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
        wanted = files[: self.ahead]
        cached = {entry["sha256"] for entry in self._record()["files"].values()} if wanted else set()
        with self._lock:
            room = self.max_bytes - sum(self._in_use.values()) - sum(s for _, s in self._pending.values())
            for url, sha256, size in wanted:
                if sha256 in self._pending or sha256 in self._in_use or sha256 in cached:
                    continue
                if size > room:
                    break  # the next file would evict one in use or about to be: read it when its turn comes
                room -= size
                self._pool = self._pool or ThreadPoolExecutor(1, thread_name_prefix="shard-prefetch")
                future = self._pool.submit(self._ensure, url, sha256, size, ".parquet")
                self._pending[sha256] = (future, size)
                future.add_done_callback(lambda _, key=sha256: self._done(key))

    def close(self) -> None:
        """Wait for the fetches under way (a reader that stops early leaves none running); the folder's
        descriptor is closed too (a later read opens it again)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        with self._lock:
            if self._folder is not None and self._pid == os.getpid():
                self._folder.close()
            self._folder = None

    def _done(self, sha256: str) -> None:
        with self._lock:
            self._pending.pop(sha256, None)

    # -- the folder and its record ---------------------------------------------------------------------

    def _dir(self) -> PrivateDir:
        """The cache's folder, opened once a process (a forked DataLoader worker opens its own)."""
        with self._lock:
            if self._folder is None or self._pid != os.getpid():
                folder = PrivateDir(self.directory, cache_folder(), RECORD, "the shard cache",
                                    "set data.cache_dir")
                folder.claim(_encode({"kind": _KIND, "files": {}, "writing": {}}))
                self._folder, self._pid = folder, os.getpid()
            return self._folder

    @contextlib.contextmanager
    def _owned(self) -> Iterator[dict]:
        """The record, held for change: the folder locked, the record written back (atomically) if changed,
        entries whose file is gone or is no longer the recorded one (replaced by hand) dropped first."""
        folder = self._dir()
        with folder.locked():
            record = self._read(folder)
            before = json.dumps(record, sort_keys=True)
            for name, entry in list(record["files"].items()):
                if _identity(folder.lstat(name)) != entry["identity"]:
                    del record["files"][name]
            for name, entry in list(record["writing"].items()):
                if (_identity(folder.lstat(name)) or [None])[0] != entry["inode"]:
                    del record["writing"][name]
            yield record
            if json.dumps(record, sort_keys=True) != before:
                folder.write_record(_encode(record))

    def _record(self) -> dict:
        folder = self._dir()
        with folder.locked():
            return self._read(folder)

    def _read(self, folder: PrivateDir) -> dict:
        with folder.open_read(RECORD) as f:  # `claim` wrote one, or found one
            data = f.read(64 << 20)
        where = folder.path / RECORD
        try:
            record = parse_json(data, where)
            RECORD_SCHEMA.check(record, "")
        except RecordError as error:
            raise DataError(f"{where}: {error}; not a record the shard cache wrote: remove its folder"
                            ) from None
        return record

    # -- fetching --------------------------------------------------------------------------------------

    def _ensure(self, url: Any, sha256: str, size: int | None, suffix: str) -> Path:
        folder = self._dir()
        with self._owned() as record:
            self._sweep(folder, record)
            name = _copy_of(record, sha256, suffix)
        if name is not None and self._intact(folder, name, sha256):
            with self._owned() as record:
                if name in record["files"]:  # not evicted by another process meanwhile
                    record["files"][name]["used"] = time.time_ns()  # most recently used
                    return folder.path / name
        name = self._fetch(folder, url, sha256, suffix)
        self.evict(keep=sha256)
        return folder.path / name

    def _fetch(self, folder: PrivateDir, url: Any, sha256: str, suffix: str) -> str:
        """Fetch `url` into a new recorded file, verify it, and give it a free name; that name."""
        with self._owned() as record:
            for _ in range(1_000_000):  # a new name each call (temp_name): a taken one is skipped
                tmp = storage.temp_name(Path(f"{sha256}{suffix}")).name
                with contextlib.suppress(FileExistsError):
                    out = folder.create(tmp)
                    break
            record["writing"][tmp] = {"inode": os.fstat(out.fileno()).st_ino}
        try:
            digest, written = hashlib.sha256(), 0
            with out, storage.open_file(url, "rb") as source:
                while block := source.read(BLOCK):
                    digest.update(block)
                    out.write(block)
                    written += len(block)
                out.flush()
                os.fsync(out.fileno())
            if digest.hexdigest() != sha256:
                raise DataError(f"{storage.url(url)}: sha256 {digest.hexdigest()[:12]}... but the manifest "
                                f"says {sha256[:12]}...; the file is not used")
            with self._owned() as record:
                entry = record["writing"].pop(tmp, None)
                if entry is None:  # removed under us (the folder emptied by hand): fetched again next time
                    raise FileNotFoundError(2, "the cache's copy was removed while it was fetched", tmp)
                fetched = _copy_of(record, sha256, suffix)  # by another process meanwhile: keep one copy
                name = fetched or _free_name(folder, sha256, suffix, tmp)
                folder.remove(tmp)
                if fetched is None:
                    identity = _identity(folder.lstat(name))  # after the unlink: it changes the change time
                    if identity is None or identity[:2] != [entry["inode"], written]:
                        raise FileNotFoundError(2, "the cache's copy was replaced meanwhile", name)
                    record["files"][name] = {"sha256": sha256, "identity": identity, "used": time.time_ns()}
        except BaseException:
            with self._owned() as record:  # a failed or interrupted fetch leaves nothing behind
                if record["writing"].pop(tmp, None) is not None:
                    folder.remove(tmp)
            raise
        with self._lock:
            self.fetched += 1
            self._verified.add(name)
        return name

    def _intact(self, folder: PrivateDir, name: str, sha256: str) -> bool:
        """Whether a recorded copy holds what its record says: hashed once a process (a copy another run
        left is untrusted until then); a damaged one is removed (it is the cache's), and fetched again."""
        if name in self._verified:
            return True
        digest = hashlib.sha256()
        try:
            with folder.open_read(name) as f:
                while block := f.read(BLOCK):
                    digest.update(block)
        except FileNotFoundError:
            return False
        if digest.hexdigest() != sha256:
            with self._owned() as record:
                if record["files"].pop(name, None) is not None:
                    folder.remove(name)
            return False
        with self._lock:
            self._verified.add(name)
        return True

    def _sweep(self, folder: PrivateDir, record: dict) -> None:
        """Remove the temporary files of fetches whose process is gone (killed): recorded ones only."""
        for name in list(record["writing"]):
            found = parse_temp(name)
            if found is not None and writer_gone(found[1], found[2]):  # this process's other threads: alive
                folder.remove(name)
                del record["writing"][name]

    def evict(self, keep: str = "") -> None:
        """Remove least recently used copies until the cache holds at most `max_bytes`; never one in use,
        being prefetched, or `keep`; never a file the record does not own."""
        with self._lock:
            protected = {*self._in_use, *self._pending, keep}
        folder = self._dir()
        with self._owned() as record:
            copies = [(e["used"], n, e) for n, e in record["files"].items()]
            total = sum(e["identity"][1] for _, _, e in copies)
            for _, name, entry in sorted(copies):
                if total <= self.max_bytes:
                    return
                if entry["sha256"] not in protected:
                    folder.remove(name)
                    del record["files"][name]
                    self._verified.discard(name)
                    total -= entry["identity"][1]


def _copy_of(record: dict, sha256: str, suffix: str) -> str | None:
    """The name of a recorded copy of that content, None when there is none."""
    copies = sorted(n for n, e in record["files"].items() if e["sha256"] == sha256 and n.endswith(suffix))
    return copies[0] if copies else None


def _encode(record: dict) -> bytes:
    return json.dumps(record, indent=1, sort_keys=True).encode()


def _identity(found: os.stat_result | None) -> list[int] | None:
    """[inode, size, modification time, change time] of a regular file found by lstat; None for anything
    else (a link, a folder, nothing)."""
    if found is None or not S_ISREG(found.st_mode):
        return None
    return [found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]


def _free_name(folder: PrivateDir, sha256: str, suffix: str, tmp: str) -> str:
    """Link the verified temporary `tmp` under the first name of the copy that is free: `<sha256>.suffix`,
    else `<sha256>.N.suffix` (a name taken by a file the cache did not write is never replaced)."""
    for n in range(1_000_000):
        name = f"{sha256}{'' if n == 0 else f'.{n}'}{suffix}"
        if folder.link(tmp, name):
            return name
    raise DataError(f"{folder.path}: no free name for {sha256}{suffix}")  # a million planted names
