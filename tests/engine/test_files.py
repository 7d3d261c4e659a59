"""A file appears under its final name complete, or not at all."""

from __future__ import annotations

import os
import threading

import pytest

from corpusprep.engine import storage
from corpusprep.engine.files import atomic_path, read_json, remove_stale_temps, temp_name, write_json
from corpusprep.errors import user_path


def test_failed_write_leaves_neither_file_nor_temp(tmp_path):
    target = tmp_path / "out.bin"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("killed mid-write")
    assert list(tmp_path.iterdir()) == []


def test_two_threads_writing_one_file_each_write_whole(tmp_path):
    """Two threads of one process write one path at once (both inside the write before either renames):
    each writes under its own temporary name, so neither removes the other's, and the file is one of the
    two contents, whole. A name of (pid, start) alone was shared: the second removed the first's file."""
    target, both_inside = tmp_path / "table.md", threading.Barrier(2, timeout=10)
    failed = []

    def write(text: str) -> None:
        try:
            with atomic_path(target) as tmp:
                tmp.write_text(text[:3])
                both_inside.wait()
                with open(tmp, "a") as f:
                    f.write(text[3:])
        except Exception as error:  # noqa: BLE001 - the test's verdict, below
            failed.append(error)

    threads = [threading.Thread(target=write, args=(text * 1000,)) for text in ("first ", "second ")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    assert target.read_text() in ("first " * 1000, "second " * 1000)
    assert [p.name for p in tmp_path.iterdir()] == ["table.md"]
    assert user_path(temp_name(target)) == target  # an error names the file being written, not its temp


def test_write_replaces_atomically_and_json_is_canonical(tmp_path):
    target = tmp_path / "sub" / "stats.json"
    write_json(target, {"b": 1, "a": [1, 2]})
    first = target.read_bytes()
    write_json(target, {"a": [1, 2], "b": 1})
    assert target.read_bytes() == first  # sorted keys: equal content, equal bytes
    assert read_json(target) == {"a": [1, 2], "b": 1}


def test_stale_temps_are_removed_and_final_files_kept(tmp_path):
    final = tmp_path / "d" / "part-00000.parquet"
    final.parent.mkdir()
    final.write_bytes(b"complete")
    temp_name(final).write_bytes(b"partial")
    (tmp_path / "d" / ".other.json.tmp-99999").write_text("{")
    (tmp_path / "d" / ".notes.txt.tmp-1").write_text("a user's file, of no name the output writes")
    assert remove_stale_temps(tmp_path, ["d/*.parquet", "d/*.json"]) == 2
    left = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert left == [".notes.txt.tmp-1", "part-00000.parquet"]


def test_a_reused_pid_does_not_keep_a_killed_writers_temp(tmp_path):
    """pid_max is often 32768: on a busy machine a killed writer's pid soon belongs to another process.
    The temporary name carries the writer's start time too, so only a live process of that pid *and* that
    start keeps its temporary; old names (`.NAME.tmp-PID`) keep the pid-only rule."""
    live = os.getppid()  # a process that is alive, and not this one
    start = storage.process_start(live)
    own = storage.process_start(os.getpid())
    assert start > 0 and temp_name(tmp_path / "x").name.startswith(f".x.tmp-{os.getpid()}-{own}-")
    for name in (f".a.json.tmp-{live}-{start}", f".b.json.tmp-{live}-{start + 1}", f".c.json.tmp-{live}"):
        (tmp_path / name).write_text("{")
    assert remove_stale_temps(tmp_path, ["*.json"]) == 1
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == [f".a.json.tmp-{live}-{start}", f".c.json.tmp-{live}"]
