"""A run directory the runner did not make (pipelines/rundir.py): `--overwrite` writes beside the files
there, never over them, and names them; a file named like one of the runner's own is refused; a refused run
leaves nothing behind, not even its lock."""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest
from rich.console import Console

from corpusprep.engine.lock import LOCK_NAME, exclusive_dir
from corpusprep.errors import UsageError
from pipelines import rundir
from pipelines.load import load_pipeline
from tests.pipelines.test_runner import run, statuses


def listing(directory) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): p.read_text() for p in directory.rglob("*") if p.is_file()}


def test_the_runner_names_its_own_files(toml, tmp_path, calls):
    names = rundir.runner_names(load_pipeline(toml), tmp_path)
    assert names == ["run.json", "pipeline.json", "report.json", "report.md", "stages",
                     "short/train-short.toml", "long/train-long.toml"]


@pytest.mark.parametrize("name", ["run.json", "pipeline.json", "report.json", "report.md",
                                  "stages/notes.txt", "short/train-short.toml"])
def test_a_users_file_named_like_the_runners_is_refused_even_with_overwrite(toml, tmp_path, calls, name):
    mine = tmp_path / "mine"
    (mine / name).parent.mkdir(parents=True, exist_ok=True)
    (mine / name).write_text("the user's own\n")
    (mine / "notes.txt").write_text("keep me\n")
    before = listing(mine)
    for overwrite in (False, True):
        with pytest.raises(UsageError) as refused:
            run(toml, mine, overwrite=overwrite)
        if overwrite or name == "run.json":  # a run.json not of ours: no run dir, whatever the flag
            clash = mine / ("stages" if name.startswith("stages/") else name)
            assert str(refused.value).startswith(f"{clash}:") and "move it away" in str(refused.value)
        assert listing(mine) == before  # nothing written over, nothing added: no lock either
        assert sorted(p.name for p in mine.iterdir()) == sorted({name.split("/")[0], "notes.txt"})
    assert not calls


def test_overwrite_writes_beside_the_users_files_and_names_them(toml, tmp_path, calls):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me\n")
    (mine / "data").mkdir()
    (mine / "data" / "x.csv").write_text("1,2\n")
    said = io.StringIO()
    report = run(toml, mine, overwrite=True, console=Console(file=said, width=200))
    assert set(statuses(report).values()) == {"ran"}
    assert f"{mine}: left in place, not written by corpusprep: data, notes.txt" in said.getvalue()
    assert (mine / "notes.txt").read_text() == "keep me\n"
    assert (mine / "data" / "x.csv").read_text() == "1,2\n"
    calls.clear()
    second = run(toml, mine)  # a run directory now: no --overwrite needed, nothing to redo
    assert set(statuses(second).values()) == {"skipped"} and not calls


def test_a_refused_run_leaves_no_directory_and_no_lock(toml, tmp_path, calls):
    run(toml, tmp_path / "run")
    other = toml.with_name("other.toml")
    other.write_text(toml.read_text().replace('name = "toy"', 'name = "other"'))
    before = listing(tmp_path / "run")
    with pytest.raises(UsageError, match="holds a run of pipeline 'toy'"):
        run(other, tmp_path / "run")
    assert listing(tmp_path / "run") == before
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "results.csv").write_text("precious\n")
    with pytest.raises(UsageError, match="not a corpusprep run directory"):
        run(toml, foreign)
    assert [p.name for p in foreign.iterdir()] == ["results.csv"]
    (foreign / "run.json").write_text('{"pipeline": 1}')  # not a record with its fields: not ours
    with pytest.raises(UsageError, match="run.json: not a record corpusprep wrote"):
        run(toml, foreign, overwrite=True)
    assert sorted(p.name for p in foreign.iterdir()) == ["results.csv", "run.json"]


def test_a_run_refused_under_its_lock_removes_the_directory_it_made(toml, tmp_path, calls, monkeypatch):
    """The second look, under the lock (another run may have written in between), refuses too: the lock
    file and the directory made for it go."""
    checks = []

    def second_look_refuses(run_dir, pipeline, overwrite):
        checks.append(run_dir)
        if len(checks) == 2:
            raise UsageError("refused under the lock")
        return []

    monkeypatch.setattr(rundir, "check_run_dir", second_look_refuses)
    with pytest.raises(UsageError, match="refused under the lock"):
        run(toml, tmp_path / "new" / "run")
    assert len(checks) == 2 and not (tmp_path / "new" / "run").exists()


def test_a_run_refused_at_the_lock_leaves_the_holders_lock_and_directory(toml, tmp_path, calls, monkeypatch):
    """Another run made the directory and took its lock after this run's first look: this run is refused
    at the lock and removes neither (they are that run's, which writes on)."""
    run_dir = tmp_path / "new" / "run"
    with contextlib.ExitStack() as other:

        def another_run_locks_first(directory):
            other.enter_context(exclusive_dir(directory))  # its own open of the lock file: another writer
            return exclusive_dir(directory)

        monkeypatch.setattr(rundir, "exclusive_dir", another_run_locks_first)
        holder = rf"another corpusprep run is writing here \(pid {os.getpid()}\)"
        with pytest.raises(UsageError, match=holder):
            run(toml, run_dir)
        assert [p.name for p in run_dir.iterdir()] == [LOCK_NAME]
    assert not calls


def test_what_a_run_starting_there_wrote_is_no_users_file(toml, tmp_path, calls):
    """Before its run.json, a run starting in a new directory has written its lock and run.json's temporary
    name: a second run is refused at that lock (not told the directory is none of corpusprep's); once that
    run is gone, killed while starting, the next one starts there and clears what it left."""
    run_dir = tmp_path / "run"
    left = run_dir / ".run.json.tmp-999999999-1"  # `temp_name`'s shape, of a pid no process has
    with exclusive_dir(run_dir):
        left.write_text('{"pipeline": "to')
        with pytest.raises(UsageError, match="another corpusprep run is writing here"):
            run(toml, run_dir)
    assert not calls
    assert set(statuses(run(toml, run_dir)).values()) == {"ran"}
    assert not left.exists()


def test_files_a_stage_recorded_in_its_former_directory_are_removed_as_the_runners(toml, tmp_path, calls):
    """An older corpusprep plotted into the train stage's directory: those files are the runner's (its
    record names them), removed before that directory is rebuilt, never left to pass for a user's."""
    run_dir = tmp_path / "run"
    run(toml, run_dir)
    record_file = run_dir / "stages" / "plot-short.done.json"
    record = json.loads(record_file.read_text())
    (run_dir / "short" / "plot" / "plot-short.txt").rename(run_dir / "short" / "train" / "plot-short.txt")
    (run_dir / "short" / "train" / "mine.txt").write_text("the user's\n")
    record_file.write_text(json.dumps({**record, "output": "short/train"}))
    said = io.StringIO()
    run(toml, run_dir, console=Console(file=said, width=300))
    assert not (run_dir / "short" / "train" / "plot-short.txt").exists()
    assert (run_dir / "short" / "train" / "mine.txt").read_text() == "the user's\n"
    assert f"plot-short: removed plot-short.txt from {run_dir / 'short' / 'train'}" in said.getvalue()
    assert (run_dir / "short" / "plot" / "plot-short.txt").exists()  # the stage ran again, in its place
