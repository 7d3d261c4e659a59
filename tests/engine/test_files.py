"""A file appears under its final name complete, or not at all."""

from __future__ import annotations

import os

import pytest

from corpusprep.engine import storage
from corpusprep.engine.files import atomic_path, read_json, remove_stale_temps, temp_name, write_json


def test_failed_write_leaves_neither_file_nor_temp(tmp_path):
    target = tmp_path / "out.bin"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("killed mid-write")
    assert list(tmp_path.iterdir()) == []


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
    assert start > 0 and temp_name(tmp_path / "x").name == f".x.tmp-{os.getpid()}-{own}"
    for name in (f".a.json.tmp-{live}-{start}", f".b.json.tmp-{live}-{start + 1}", f".c.json.tmp-{live}"):
        (tmp_path / name).write_text("{")
    assert remove_stale_temps(tmp_path, ["*.json"]) == 1
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == [f".a.json.tmp-{live}-{start}", f".c.json.tmp-{live}"]
