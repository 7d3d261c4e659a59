"""Writers and readers of an output directory keep apart through its lock file, `.corpusprep.lock`.

A writer (every command that writes an output, the trainer in its run dir) holds an exclusive lock for its
whole run; a reader (a stage reading another's output: build-pairs its vocab, shard its pairs and vocab, the
trainer its shards) holds a shared lock for its whole run. So a second writer fails at start, a writer fails
at start while a reader reads (`shard --overwrite` while a trainer trains on the shards), and a reader fails
at start while a writer writes; each with one line naming the other process. The kernel releases a lock
when its process dies, so a killed run never leaves a stale one.

The lock file is opened without following a symbolic link and used only if it is a regular file with one
name (a link or a hard link to another file would have that file truncated), never blocking on a FIFO.
flock does not reach across machines on every network file system: the trainer also checks each shard's
identity as it opens it (trainer/shards.py).

An object store (`s3://`) has no flock. There the writer holds a *lease* instead, an object of the same
name, `DIR/.corpusprep.lock`, by this rule:

- it is created with a conditional write that succeeds only where no object is (S3's `If-None-Match: *`),
  holding the writer's id (host, pid, a random nonce) and a heartbeat time (the writer's clock, UTC);
- a background thread renews the heartbeat every `HEARTBEAT_SECONDS`, each renewal a write conditional on
  the lease still being the object it last wrote (`If-Match` its ETag); the manifest is written only after
  a read of the lease shows it still ours (`check_held`: a writer that lost it stops there, in one line;
  what a store cannot give is a fence between that read and the manifest's PUT);
- a second writer fails at start in one line naming the holder and its last heartbeat;
- a lease whose heartbeat is older than `LEASE_TIMEOUT_SECONDS` belongs to a writer that is dead (killed,
  its machine gone) or stalled for that long: it may be taken over, by a write conditional on it being
  still that stale object, so of two writers taking it over one wins; the clocks of the machines writing
  one output must agree to well within the timeout (NTP does). A heartbeat more than
  `CLOCK_SKEW_SECONDS` ahead of this machine's clock is stale too: no writer whose clock agrees wrote it (a
  forged lease dated 9999 would otherwise hold the prefix for good). A lease written from this host by a
  pid that no longer runs here (or is a zombie) is stale at once (a killed run resumed on the same machine
  need not wait);
- the writer deletes its lease when it finishes or fails; a killed one leaves it, for the timeout above;
- a reader of a store (build-pairs its vocab, shard its pairs) takes no lease: it fails at start while a
  live writer's lease is there, but a writer does not see it; what protects it is the manifest's sha256 of
  every file, which readers check (`manifest.require`, `verify_file`, the trainer's cache).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import socket
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from corpusprep.engine import storage
from corpusprep.engine.files import alive
from corpusprep.errors import CorpusprepError, UsageError

LOCK_NAME = ".corpusprep.lock"  # the lock file; on an object store, the writer's lease object
LEASE_TIMEOUT_SECONDS = 120.0  # a lease not renewed for this long may be taken over
HEARTBEAT_SECONDS = 15.0  # how often its holder renews it: many renewals fit in the timeout
CLOCK_SKEW_SECONDS = 30.0  # how far ahead of this clock a live writer's heartbeat may be (its clock's error)


def _open(directory: Path) -> int | None:
    """The directory's lock file, opened (created if needed) without following a link or blocking; a name
    that is not a plain regular file of its own is refused in one line. None where it cannot be created (a
    read-only input: nobody can write there either)."""
    path = directory / LOCK_NAME
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UsageError(f"{path}: a symbolic link, not corpusprep's lock file; remove it (corpusprep "
                             "never opens a link it did not make)") from None
        if error.errno in (errno.EISDIR, errno.ENXIO, errno.ENODEV):
            raise UsageError(f"{path}: not a regular file, so not corpusprep's lock; remove it") from None
        if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and not path.exists():
            return None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        what = "a hard link to another file" if stat.S_ISREG(st.st_mode) else "not a regular file (a FIFO?)"
        raise UsageError(f"{path}: {what}, so not corpusprep's lock file; remove it")
    return fd


def _readers(fd: int) -> list[int]:
    """The pids holding a shared lock on the file of `fd` (Linux's /proc/locks; [] elsewhere)."""
    st = os.fstat(fd)
    file = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"  # as /proc/locks names it
    try:
        lines = Path("/proc/locks").read_text().splitlines()  # the kernel's table, not a store
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if "FLOCK" in fields and "READ" in fields and len(fields) >= 6:
            pid, where = fields[-4], fields[-3]
            if where == file and pid.isdigit():
                found.append(int(pid))
    return sorted(set(found))


@contextlib.contextmanager
def exclusive_dir(directory: str | Path) -> Iterator[Path]:
    """Hold the writer's lock on `directory` (created if needed) for the duration of a run; refused in one
    line while another run writes or reads it."""
    storage.makedirs(directory)
    with _locked(Path(directory), exclusive=True):
        yield Path(directory)


@contextlib.contextmanager
def shared_dir(directory: str | Path) -> Iterator[Path]:
    """Hold a reader's lock on the output `directory` while a run reads it: refused in one line while a
    writer writes it, and a writer is refused while this is held."""
    with _locked(Path(directory), exclusive=False):
        yield Path(directory)


@contextlib.contextmanager
def _locked(directory: Path, exclusive: bool) -> Iterator[None]:
    local = storage.store_for(directory).local(directory)
    if local is None:  # an object store: a lease (module docstring)
        with _leased(directory, exclusive):
            yield
        return
    with _flocked(local, exclusive):
        yield


@contextlib.contextmanager
def _flocked(directory: Path, exclusive: bool) -> Iterator[None]:
    fd = _open(directory) if directory.is_dir() else None
    if fd is None:  # a read-only directory: nobody writes there (a write of ours fails with its own line)
        yield
        return
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            readers_only = exclusive and _granted(fd, fcntl.LOCK_SH)
            if readers_only:
                pids = ", ".join(str(p) for p in _readers(fd) if p != os.getpid()) or "unknown"
                raise UsageError(
                    f"{directory}: a corpusprep process is reading this output (pid {pids}); replacing it "
                    "now would change what that process reads: wait for it to finish, or pick another "
                    "directory"
                ) from None
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            advice = "wait for it or pick another output directory" if exclusive else "wait for it to finish"
            raise UsageError(f"{directory}: another corpusprep run is writing here (pid {holder}); {advice}"
                             ) from None
        if exclusive:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def _granted(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


# --- object stores: the writer's lease (module docstring) ---------------------------------------------


@dataclass
class Lease:
    """The lease this process holds on an output on a store: its object, the tag of what it last wrote
    there, and its renewal thread."""

    path: Path
    holder: dict
    tag: str
    lost: str = ""  # why it is no longer ours, once a renewal found another writer's lease there
    stop: threading.Event = field(default_factory=threading.Event)

    def body(self) -> bytes:
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        return json.dumps({**self.holder, "heartbeat": now, "timeout_s": LEASE_TIMEOUT_SECONDS}).encode()

    def renew(self) -> None:
        """Rewrite the heartbeat every HEARTBEAT_SECONDS while the lease is still the object we wrote."""
        store = storage.store_for(self.path)
        while not self.stop.wait(HEARTBEAT_SECONDS):
            try:
                self.tag = store.replace_if(self.path, self.body(), self.tag)
            except FileExistsError:
                self.lost = "another writer took it over (this run stalled longer than the lease timeout)"
                return
            except (OSError, CorpusprepError):
                continue  # a failed request: the next beat tries again, well within the timeout


_HELD: dict[str, Lease] = {}  # url of the directory -> the lease this process holds on it


def new_holder() -> dict:
    """This writer's id: host, pid and a random nonce (two threads of one process are two writers)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "nonce": secrets.token_hex(8)}


@contextlib.contextmanager
def _leased(directory: Path, exclusive: bool) -> Iterator[None]:
    path = storage.join(directory, LOCK_NAME)
    if not exclusive:  # a reader: refused while a live writer holds the output, holds nothing itself
        found = read_lease(path)
        if found is not None and not _stale(found[0]):
            raise UsageError(f"{storage.url(directory)}: {_describe(found[0])} is writing here; wait for it "
                             "to finish")
        yield
        return
    lease = take_lease(path, new_holder())
    _HELD[storage.url(directory)] = lease
    beat = threading.Thread(target=lease.renew, name=f"lease {storage.url(directory)}", daemon=True)
    beat.start()
    try:
        yield
    finally:
        lease.stop.set()
        beat.join()
        _HELD.pop(storage.url(directory), None)
        _release(lease)


def take_lease(path: str | Path, holder: dict) -> Lease:
    """Create the lease at `path`, or take over a stale one; one line naming a live holder."""
    path = Path(path)
    store = storage.store_for(path)
    lease = Lease(path, holder, "")
    try:
        lease.tag = store.create_exclusive(path, lease.body())
        return lease
    except FileExistsError:
        pass
    found = read_lease(path)
    if found is None:  # released between our two requests: try once more
        lease.tag = _create_or_refuse(path, lease)
        return lease
    record, tag = found
    if not _stale(record):
        raise UsageError(f"{storage.url(path.parent)}: {_describe(record)} is writing here; wait for it or "
                         "pick another output directory")
    try:
        lease.tag = store.replace_if(path, lease.body(), tag)
    except FileExistsError:
        raise UsageError(f"{storage.url(path.parent)}: another corpusprep run took over its stale lease "
                         "just now; wait for it or pick another output directory") from None
    return lease


def _create_or_refuse(path: Path, lease: Lease) -> str:
    try:
        return storage.store_for(path).create_exclusive(path, lease.body())
    except FileExistsError:
        raise UsageError(f"{storage.url(path.parent)}: another corpusprep run is starting to write here; "
                         "wait for it or pick another output directory") from None


def read_lease(path: Path) -> tuple[dict, str] | None:
    """(the lease's record, its content tag), None when there is none; a lease corpusprep did not write is
    one line naming the object."""
    store = storage.store_for(path)
    for _ in range(3):  # a renewal between the look-up and the read: again
        try:
            data, tag = store.read_tagged(path, 4096)
        except FileNotFoundError:
            return None
        except FileExistsError:
            continue
        return _parse_lease(path, data), tag
    raise UsageError(f"{storage.url(path)}: changing as it is read; another corpusprep run is writing here")


def _parse_lease(path: Path, data: bytes) -> dict:
    try:
        record = json.loads(data)
        if datetime.fromisoformat(record["heartbeat"]).tzinfo is None:
            raise ValueError
        pid = record["pid"]
        if not (isinstance(record["host"], str) and type(pid) is int and 0 < pid < 2**31):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise UsageError(f"{storage.url(path)}: not a lease corpusprep wrote; delete it if no run is "
                         "writing this output") from None
    return record


def lease_age(record: dict) -> float:
    """Seconds since the lease's last heartbeat, by this machine's clock."""
    return (datetime.now(UTC) - datetime.fromisoformat(record["heartbeat"])).total_seconds()


def _stale(record: dict) -> bool:
    """Not renewed for LEASE_TIMEOUT_SECONDS, renewed "later" than this clock allows (CLOCK_SKEW_SECONDS
    ahead: no live writer's), or its writer was a process of this host that is gone."""
    if record["host"] == socket.gethostname() and record["pid"] != os.getpid() and not alive(record["pid"]):
        return True
    return not -CLOCK_SKEW_SECONDS <= lease_age(record) <= LEASE_TIMEOUT_SECONDS


def _describe(record: dict) -> str:
    age = lease_age(record)
    when = f"{age:.0f} s ago" if age >= 0 else f"{-age:.0f} s ahead of this machine's clock"
    return (f"another corpusprep run (host {record['host']}, pid {record['pid']}, heartbeat {when}; "
            f"its lease is stale after {LEASE_TIMEOUT_SECONDS:.0f} s)")


def _release(lease: Lease) -> None:
    """Delete the lease if it is still ours (a run that lost it leaves the new holder's alone)."""
    found = None
    with contextlib.suppress(OSError, CorpusprepError):
        found = read_lease(lease.path)
    if found is not None and found[0].get("nonce") == lease.holder["nonce"]:
        with contextlib.suppress(OSError, CorpusprepError):
            storage.remove(lease.path, missing_ok=True)


def check_held(directory: str | Path) -> None:
    """Before a writer commits (its manifest): one line if its lease on a store is no longer the object
    there (read now). Nothing for a local directory (flock holds until the process ends)."""
    lease = _HELD.get(storage.url(directory))
    if lease is None:
        return
    if not lease.lost:  # looked at now, not at the last heartbeat: a takeover since is seen
        found = read_lease(lease.path)
        if found is None or found[0].get("nonce") != lease.holder["nonce"]:
            lease.lost = "another writer took it over, or it was deleted"
    if lease.lost:
        raise CorpusprepError(f"{storage.url(directory)}: this run's lease was lost: {lease.lost}; nothing "
                              "was committed, rerun to resume")
