"""The trainer's shard cache (trainer/cache.py) owns exactly what it wrote: its files live in a folder it made
itself inside `data.cache_dir` (or the system's temporary directory), entered without following a link, and
recorded by name and inode; eviction removes recorded files only. So a user's `*.parquet` in the directory
they named survives any eviction, and a link planted where the cache keeps its files (another user's, in a
shared sticky /tmp) is refused in one line with nothing written, changed or deleted where it points.

The fetches read local files (the seam fetches any path alike): no S3 server is needed."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from corpusprep.errors import UsageError
from trainer.cache import ShardCache, cache_folder


def shards(directory: Path, n: int, size: int = 1000, seed: int = 0) -> list[tuple[Path, str, int]]:
    """`n` source files of random bytes: (path, sha256, size), what the cache fetches."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    found = []
    for i in range(n):
        data = rng.randbytes(size)
        path = directory / f"s{i}.parquet"
        path.write_bytes(data)
        found.append((path, hashlib.sha256(data).hexdigest(), size))
    return found


def read_all(cache: ShardCache, files: list[tuple[Path, str, int]]) -> None:
    """Read each file through the cache, as the trainer does: fetched (or found), used, released."""
    for path, sha, size in files:
        assert cache.local(path, sha, size).read_bytes() == path.read_bytes()
        cache.release(sha)


def opened(cache: ShardCache, path: Path, sha: str, size: int) -> bytes:
    """The copy's bytes, read as the trainer maps it: a copy another cache over the folder evicted between
    the look-up and the read is looked up again (trainer/data.py: `ShardReader._map`)."""
    for _ in range(20):
        with contextlib.suppress(FileNotFoundError):
            return cache.local(path, sha, size).read_bytes()
    raise AssertionError(f"{path}: evicted under its reader 20 times in a row")


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root` as lstat sees it: (kind, bytes or target, mode); links never followed."""
    found = {}
    for where, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(where) / name
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                found[str(path)] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[str(path)] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                found[str(path)] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
    return found


def test_a_users_parquet_files_in_the_cache_dir_survive_every_eviction(tmp_path):
    files = shards(tmp_path / "src", 4)
    mine = tmp_path / "mine"  # data.cache_dir pointed at a folder of the user's own
    mine.mkdir()
    (mine / "precious.parquet").write_bytes(b"x" * 5000)
    (mine / f"{files[0][1]}.parquet").write_bytes(b"named like a cached copy, but the user's")
    (mine / "notes.txt").write_text("keep\n")
    before = snapshot(mine)
    cache = ShardCache(mine, max_bytes=1500, ahead=0)  # room for one copy: every fetch evicts
    for _ in range(2):
        read_all(cache, files)
    after = snapshot(mine)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing of the user's changed
    own = mine / cache_folder()
    assert set(after) - set(before) <= {str(own), *(str(p) for p in own.iterdir())}  # the cache's folder
    assert cache.fetched == 8  # each fetch evicted the previous copy


def test_a_link_where_the_cache_keeps_its_files_is_refused_and_its_target_untouched(tmp_path):
    """Another user plants `corpusprep-shard-cache-<uid>` in a shared sticky temporary directory, pointing at
    a directory of the victim's (hosts with fs.protected_symlinks=0 follow it): refused, nothing there
    written, changed (its mode included) or deleted."""
    files = shards(tmp_path / "src", 3)
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    victim = tmp_path / "victim"
    victim.mkdir()
    os.chmod(victim, 0o775)
    (victim / "precious.parquet").write_bytes(b"y" * 5000)
    (sticky / cache_folder()).symlink_to(victim)
    before = snapshot(tmp_path)
    cache = ShardCache(sticky, max_bytes=1500, ahead=0)
    refused = r"a symbolic link, not the shard cache's folder; corpusprep follows no link there \(remove it, "
    with pytest.raises(UsageError, match=refused + r"or set data\.cache_dir\)$"):
        read_all(cache, files)
    assert snapshot(tmp_path) == before


def test_a_folder_the_cache_did_not_make_is_refused_and_left_as_it_was(tmp_path):
    """A folder of that name that others may write into (its mode is never changed), or that holds files and
    no record of the cache's: not the cache's."""
    files = shards(tmp_path / "src", 1)
    for mode, content in ((0o777, {}), (0o700, {"a.parquet": b"1"})):
        root = tmp_path / f"root-{mode:o}"
        folder = root / cache_folder()
        folder.mkdir(parents=True)
        os.chmod(folder, mode)
        for name, data in content.items():
            (folder / name).write_bytes(data)
        before = snapshot(root)
        with pytest.raises(UsageError, match=r"not a folder the shard cache made"):
            read_all(ShardCache(root, max_bytes=1 << 20, ahead=0), files)
        assert snapshot(root) == before


def test_links_and_files_planted_inside_the_cache_are_never_followed_nor_deleted(tmp_path):
    """Inside its own folder the cache trusts only what its record says it wrote (name and inode): a link
    at the name of a copy it will fetch, or a file put there by hand, is left alone, and the copy goes
    under another name; its target is never written, touched or deleted."""
    files = shards(tmp_path / "src", 3)
    root = tmp_path / "cache"
    read_all(ShardCache(root, max_bytes=1 << 20, ahead=0), files[:1])  # the folder, made by the cache
    own = root / cache_folder()
    target = tmp_path / "target.bin"
    target.write_bytes(b"t" * 3000)
    os.utime(target, ns=(1, 1))
    (own / f"{files[1][1]}.parquet").symlink_to(target)
    (own / f"{files[2][1]}.parquet").write_bytes(b"by hand")
    (own / "extra.parquet").symlink_to(target)
    planted = {p: snapshot(tmp_path)[str(p)] for p in (own / f"{files[1][1]}.parquet",
                                                       own / f"{files[2][1]}.parquet", own / "extra.parquet")}
    cache = ShardCache(root, max_bytes=1500, ahead=0)
    for _ in range(2):
        read_all(cache, files)
    now = snapshot(tmp_path)
    assert all(now[str(p)] == v for p, v in planted.items())
    assert target.read_bytes() == b"t" * 3000 and target.stat().st_mtime_ns == 1


@pytest.mark.skipif(os.getuid() != 0, reason="gives a folder to another user: needs root")
def test_a_folder_of_another_user_is_refused(tmp_path):
    files = shards(tmp_path / "src", 1)
    folder = tmp_path / "root" / cache_folder()
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 65534, 65534)
    with pytest.raises(UsageError, match=r"belongs to another user \(uid 65534\)"):
        read_all(ShardCache(tmp_path / "root", max_bytes=1 << 20, ahead=0), files)


def killed_fetch(cache: ShardCache, sha: str) -> str:
    """The state a fetch killed mid-way leaves: its temporary file, named for its process (gone), recorded
    as being written (as `ShardCache._fetch` records it before the first byte)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    name = f".{sha}.parquet.tmp-{gone.pid}-0"
    with cache._owned() as record, cache._dir().create(name) as out:
        out.write(b"half")
        record["writing"][name] = {"inode": os.fstat(out.fileno()).st_ino}
    return name


@pytest.mark.slow  # 2 s of rounds, at least 10 (3 s on a loaded machine)
def test_random_faults_never_touch_what_the_cache_did_not_write(tmp_path):
    """A seeded random sequence (bounded in time) of user files and links planted in the cache's folder and
    beside it, fetches, evictions (a bound of one to four copies), damaged copies, killed fetches' leftovers,
    and two caches over the same folder reading at once: every file the cache did not write keeps its bytes,
    every link its target, and every read returns the source's bytes."""
    rng = random.Random(int(os.environ.get("CORPUSPREP_FUZZ_SEED", "39")))
    files = shards(tmp_path / "src", 6, size=700, seed=1)
    root = tmp_path / "root"
    root.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.parquet").write_bytes(b"v" * 900)
    foreign = snapshot(victim)  # what the cache did not write: path -> its snapshot

    def plant(where: Path) -> None:
        """A file or link of the user's: at a free name, or in place of one of the cache's copies (removed
        by hand), which then is the user's (its name still in the cache's record)."""
        copies = [p.name for p in where.glob("[0-9a-f]*.parquet") if p.is_file() and str(p) not in foreign]
        name = rng.choice([f"{rng.choice(files)[1]}.parquet", f"u{rng.randrange(99)}.parquet", "owned.json",
                           f".{rng.choice(files)[1]}.parquet.tmp-999999-1", "notes.txt", *copies[:1] * 3])
        path = where / name
        if str(path) in foreign or path.name == "owned.json" and path.exists():
            return
        if path.is_file() and not path.is_symlink():
            path.unlink()  # a copy of the cache's, replaced by hand
        if rng.random() < 0.5:
            path.symlink_to(rng.choice([victim, victim / "precious.parquet", tmp_path / "nowhere"]))
        else:
            path.write_bytes(rng.randbytes(rng.randrange(1, 2000)))
        foreign[str(path)] = snapshot(where)[str(path)]

    killed: set[Path] = set()  # the temporary files of fetches whose process died: swept by the next fetch
    deadline, rounds = time.monotonic() + 2, 0
    while time.monotonic() < deadline or rounds < 10:
        rounds += 1
        own = root / cache_folder()
        plant(root)
        if own.is_dir():
            plant(own)
            if rng.random() < 0.3:
                killed.add(own / killed_fetch(ShardCache(root, 1, 0), rng.choice(files)[1]))
            if rng.random() < 0.3:  # a cached copy damaged on disk: fetched again, never used
                copies = [p for p in own.glob("*.parquet") if str(p) not in foreign and not p.is_symlink()]
                if copies:
                    rng.choice(copies).write_bytes(b"damaged")
        bound = rng.randint(1, 4) * 700
        caches = [ShardCache(root, bound, ahead=rng.randint(0, 2)) for _ in range(rng.randint(1, 2))]
        errors: list[BaseException] = []

        def read(cache: ShardCache, errors: list = errors) -> None:
            try:
                order = rng.sample(files, len(files))
                for i, (path, sha, size) in enumerate(order):
                    cache.prefetch(order[i + 1 :])
                    assert opened(cache, path, sha, size) == path.read_bytes()
                    cache.release(sha)
                cache.close()
            except BaseException as error:  # noqa: BLE001 - reported below, with the seed
                errors.append(error)

        threads = [threading.Thread(target=read, args=(c,)) for c in caches]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        now = snapshot(tmp_path)
        changed = [p for p, v in foreign.items() if now.get(p) != v]
        assert not changed, (rounds, changed)
        assert not [p for p in killed if p.exists()], rounds
