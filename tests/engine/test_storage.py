"""The storage seam (corpusprep/engine/storage.py): the local store's semantics, the one-line refusal of an
unknown scheme, and a second store registered in `STORES` picked by its scheme and used by real stage code
(the executor's markers, sentence files, Parquet, manifests' hashing)."""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import random
import re
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import pytest

from corpusprep.engine import storage
from corpusprep.engine.executor import LocalExecutor, Task
from corpusprep.engine.files import read_json, write_json
from corpusprep.engine.local_store import LocalStore
from corpusprep.engine.lock import exclusive_dir
from corpusprep.engine.manifest import sha256_file
from corpusprep.errors import UsageError
from corpusprep.split.stage import write_parquet, write_text

# --- the local store ------------------------------------------------------------------------------------


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.bin"
    storage.write_bytes(target, b"old")
    with pytest.raises(RuntimeError), storage.atomic_open(target, "wb") as f:
        f.write(b"half of the new")
        raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]
    with pytest.raises(RuntimeError), storage.atomic_dir(tmp_path / "ckpt") as tmp:
        (tmp / "weights").write_bytes(b"part")
        raise RuntimeError("disk full")
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_writes_replace_and_text_keeps_its_newlines(tmp_path):
    storage.write_text(tmp_path / "a" / "b.txt", "x\r\ny\n", encoding="utf-8", newline="")
    assert (tmp_path / "a" / "b.txt").read_bytes() == b"x\r\ny\n"  # parents made, no newline translation
    storage.write_bytes(tmp_path / "c.bin", b"new")
    storage.replace(tmp_path / "c.bin", tmp_path / "a" / "b.txt")
    assert storage.read_bytes(tmp_path / "a" / "b.txt") == b"new"
    assert not (tmp_path / "c.bin").exists()
    storage.copy_file(tmp_path / "a" / "b.txt", tmp_path / "copy")
    assert storage.read_text(tmp_path / "copy") == "new"
    storage.remove(tmp_path / "copy")
    storage.remove(tmp_path / "copy", missing_ok=True)
    with pytest.raises(FileNotFoundError):
        storage.remove(tmp_path / "copy")
    storage.remove_tree(tmp_path / "a")
    storage.remove_tree(tmp_path / "a")  # nothing there: nothing to do
    assert list(tmp_path.iterdir()) == []


def test_listings_are_sorted_whatever_the_creation_order(tmp_path):
    names = [f"f{i:03d}.json" for i in range(60)] + ["b.txt", "A.json"]
    random.Random(3).shuffle(names)
    for name in names:
        (tmp_path / name).write_text("{}")
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    (tmp_path / "sub" / "deep" / "z.json").write_text("{}")
    assert [p.name for p in storage.list_dir(tmp_path)] == sorted([*names, "sub"])
    assert storage.glob(tmp_path, "*.json") == sorted(tmp_path / n for n in names if n.endswith(".json"))
    assert storage.rglob(tmp_path, "z.json") == [tmp_path / "sub" / "deep" / "z.json"]
    assert storage.match(str(tmp_path / "**" / "z.json")) == [tmp_path / "sub" / "deep" / "z.json"]
    dirs, files = storage.entries(tmp_path)
    assert dirs == ["sub"] and sorted(files) == sorted(names)


def test_a_recursive_glob_descends_into_no_linked_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text("{}")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "link").symlink_to(outside, target_is_directory=True)
    assert storage.rglob(tmp_path / "out", "*.json") == []


def test_file_urls_are_local_paths(tmp_path):
    url = f"file://{tmp_path}/x.json"
    assert isinstance(storage.store_for(url), LocalStore)
    write_json(url, {"a": 1})
    assert read_json(tmp_path / "x.json") == {"a": 1}
    assert storage.local_path(url) == tmp_path / "x.json"


# --- schemes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["abfs://bucket/pairs", Path("wasb://bucket/pairs"), "HDFS://host/x"])
def test_a_scheme_without_a_store_is_one_line_naming_the_path(path):
    with pytest.raises(UsageError) as error:
        storage.open_file(path)
    message = str(error.value)
    assert "\n" not in message and os.fspath(path) in message
    assert re.search(r"no storage for the scheme (abfs|wasb|hdfs)://", message)
    assert "file://" in message  # what is known


def test_plain_paths_with_a_colon_are_no_url(tmp_path):
    assert storage.scheme_of(tmp_path / "a:b") is None
    assert storage.scheme_of("notes:2024.txt") is None


# --- a second store, registered in the table --------------------------------------------------------------


class MemoryStore(storage.Store):
    """A store without rename or local paths (an object store's shape): whole files put in one step.
    Paths are `mem://key` or the same after pathlib folded it (`mem:/key`)."""

    files: dict[str, bytes] = {}
    puts: list[str] = []

    @staticmethod
    def key(path) -> str:
        return re.sub(r"^mem:/+", "", os.fspath(path)).rstrip("/")

    def path(self, key: str) -> Path:
        return Path(f"mem:/{key}")

    def open(self, path, mode="rb", **kwargs):
        key = self.key(path)
        if "r" in mode:
            data = io.BytesIO(self.files[key]) if key in self.files else None
            if data is None:
                raise FileNotFoundError(2, "no such object", os.fspath(path))
            return data if "b" in mode else io.TextIOWrapper(data, **kwargs)
        raise ValueError(f"{mode}: an object store writes whole files (atomic_path)")

    def put_file(self, local, path):
        self.files[self.key(path)] = Path(local).read_bytes()
        self.puts.append(self.key(path))

    def list(self, path):
        prefix = self.key(path) + "/"
        children = {k[len(prefix):].split("/")[0] for k in self.files if k.startswith(prefix)}
        return [self.path(prefix + c) for c in sorted(children)]

    def glob(self, path, pattern):
        prefix = self.key(path) + "/"
        found = set()
        for key in self.files:
            rest = key[len(prefix):] if key.startswith(prefix) else None
            if rest is not None and PurePosixPath(rest).match(pattern) and fnmatch.fnmatch(rest, pattern):
                found.add(key)
        return sorted(self.path(k) for k in found)

    def stat(self, path):
        key = self.key(path)
        if key not in self.files:
            raise FileNotFoundError(2, "no such object", os.fspath(path))
        return SimpleNamespace(st_size=len(self.files[key]), st_mtime_ns=0)

    def is_dir(self, path):
        return any(k.startswith(self.key(path) + "/") for k in self.files)

    def is_file(self, path):
        return self.key(path) in self.files

    def makedirs(self, path):
        pass  # an object store has no directories

    def replace(self, source, target):
        self.files[self.key(target)] = self.files.pop(self.key(source))

    def remove(self, path, missing_ok=False):
        if self.files.pop(self.key(path), None) is None and not missing_ok:
            raise FileNotFoundError(2, "no such object", os.fspath(path))

    def remove_tree(self, path):
        key = self.key(path)
        for k in [k for k in self.files if k == key or k.startswith(key + "/")]:
            del self.files[k]

    def rmdir(self, path):
        pass


@pytest.fixture
def memory(monkeypatch):
    """`mem://` registered as one row of the table, as a new backend would be."""
    monkeypatch.setitem(storage.STORES, "mem", f"{__name__}:MemoryStore")
    monkeypatch.setattr(storage, "_LOADED", {})
    MemoryStore.files, MemoryStore.puts = {}, []
    return MemoryStore


def test_the_table_picks_a_store_by_scheme(memory):
    assert isinstance(storage.store_for("mem://bucket/x"), memory)
    assert isinstance(storage.store_for(Path("mem://bucket/x")), memory)  # pathlib folds `//`: still ours
    assert storage.store_for("mem://a") is storage.store_for("mem://b")  # one instance, made on first use
    assert isinstance(storage.store_for("/tmp/x"), LocalStore)
    with pytest.raises(UsageError, match="mem://bucket/lock: needs a local file system"):
        storage.local_path("mem://bucket/lock")
    no_lease = "no conditional write, so no writer.s lease"  # engine/lock.py: a store's writer needs one
    with pytest.raises(UsageError, match=no_lease), exclusive_dir("mem://bucket/out"):
        pass
    with pytest.raises(UsageError, match="on another store"):
        storage.replace("mem://bucket/a", "/tmp/a")


def test_an_atomic_write_to_an_object_store_puts_the_whole_file_or_nothing(memory):
    with pytest.raises(RuntimeError), storage.atomic_open("mem://b/x.bin", "wb") as f:
        f.write(b"half")
        raise RuntimeError("killed")
    assert memory.files == {} and memory.puts == []
    storage.write_bytes("mem://b/x.bin", b"whole")
    assert memory.files == {"b/x.bin": b"whole"} and memory.puts == ["b/x.bin"]


def test_stage_code_runs_on_a_registered_store(memory):
    """The executor's markers and its record of each output (size, sha256), a sentences file, a Parquet file
    written and read back through pyarrow, and JSON: all on `mem://`, nothing on the local disk."""
    documents = [("d1", ["First sentence.", "Second one."]), ("d2", ["Third."])]

    def task(t: Task) -> dict:
        write_text(f"mem://run/{t.id}.txt", documents)
        return {"documents": len(documents)}

    tasks = [Task(f"part-{i}", i, outputs=(f"part-{i}.txt",)) for i in range(3)]
    stats = LocalExecutor(workers=1).run(task, tasks, marker_dir="mem://run/.work/markers", root="mem://run")
    assert stats == [{"documents": 2}] * 3
    sentences = b"First sentence.\nSecond one.\n\nThird.\n"
    assert memory.files["run/part-1.txt"] == sentences
    marker = read_json("mem://run/.work/markers/part-1.done.json")
    assert marker["outputs"] == {"part-1.txt": {"size": len(sentences),
                                                "sha256": hashlib.sha256(sentences).hexdigest()}}
    assert sha256_file("mem://run/part-2.txt") == hashlib.sha256(sentences).hexdigest()
    # a rerun finds every task done from the markers on the store, and runs none
    ran = []
    again = LocalExecutor(workers=1).run(lambda t: ran.append(t) or {}, tasks,
                                         marker_dir="mem://run/.work/markers", root="mem://run")
    assert ran == [] and again == stats

    write_parquet("mem://run/sentences.parquet", documents)
    table = storage.parquet_file("mem://run/sentences.parquet").read()
    assert table.column("text").to_pylist() == ["First sentence.", "Second one.", "Third."]
    assert storage.read_table("mem://run/sentences.parquet").num_rows == 3
    listed = [p.name for p in storage.list_dir("mem://run")]
    assert listed == [".work", "part-0.txt", "part-1.txt", "part-2.txt", "sentences.parquet"]
    assert not Path("mem:").exists()  # no local folder named after the scheme
