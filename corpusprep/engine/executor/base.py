"""What every executor shares: tasks, completion markers, skip and merge. An engine only says how tasks run.

A stage function is a plain, picklable top-level function `fn(task) -> stats` over one partition that writes
its own outputs atomically. The executor alone decides what runs: it never changes what a task computes, so
the output is the same whatever the engine or the number of workers. After a task's outputs are in place its
completion marker (its stats, and the size and sha256 of each output) is written; a rerun skips a task whose
marker exists and whose outputs are intact, and reuses its stats. `Executor.run` does all of that for every
engine; an engine implements `_map`, which runs the tasks still to do (through `run_and_mark`).
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from corpusprep.engine import faults, records, storage
from corpusprep.engine.files import write_json
from corpusprep.engine.manifest import sha256_file
from corpusprep.errors import DataError

Stats = dict[str, Any]
OUTPUTS_KEY = "_outputs"  # a stage may list outputs it could not declare up front (relative to the root)


@dataclass(frozen=True)
class Task:
    """One unit of work: `id` is unique in its stage and a safe file name; `args` is any picklable payload;
    `outputs` are the files it writes, relative to the run's root (recorded, with sizes and checksums, in
    its marker: a task whose files are gone is run again)."""

    id: str
    args: Any
    outputs: tuple[str, ...] = ()


class Executor(abc.ABC):
    """Runs a stage's tasks somewhere. `name` is the engine's name in `ENGINES` (and in pipeline reports);
    `settings` are the `ExecutorOptions` fields it takes besides `workers` (passed by keyword)."""

    name: ClassVar[str]
    settings: ClassVar[tuple[str, ...]] = ()

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or None  # None: the engine's own default

    @classmethod
    def from_options(cls, options: Any) -> Executor:
        """The executor for validated `ExecutorOptions`."""
        return cls(options.workers, **{key: getattr(options, key) for key in cls.settings})

    def sized(self, seconds: float) -> Executor:
        """The executor for a stage of about `seconds` of work in one process (the local pool may be
        replaced by one process when the stage is too small to pay for a pool)."""
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, workers={self.workers})"

    @abc.abstractmethod
    def _map(self, fn: Callable[[Task], Stats], tasks: Sequence[Task], marker_dir: Path,
             root: Path) -> Iterator[tuple[Task, dict]]:
        """Run every task through `run_and_mark`; yield (task, its marker's record) as each finishes."""

    def run(
        self,
        fn: Callable[[Task], Stats],
        tasks: Sequence[Task],
        *,
        marker_dir: str | Path,
        root: str | Path | None = None,
        known: dict[str, Any] | None = None,
        on_done: Callable[[Task, Stats, bool], None] | None = None,
        stats_kind: str | None = None,
    ) -> list[Stats]:
        """Run `fn` on every task not yet done; return every task's stats in task order.

        A task is done when its marker (or its record in `known`, from an artifact's manifest) exists and
        every output it recorded is still there with its size: a deleted or truncated output reruns just
        that task. `root`: what outputs are relative to (default: the marker directory's parent).
        `on_done(task, stats, skipped)` is called in the parent as each task finishes (for progress bars).
        `stats_kind`: the records kind (engine.records) of what `fn` returns, against which a marker's stats
        are checked before they are reused.
        """
        ids = [task.id for task in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("task ids must be unique within a stage")
        marker_dir = Path(marker_dir)
        root = Path(root) if root is not None else marker_dir.parent
        storage.makedirs(marker_dir)
        results: dict[str, Stats] = {}
        todo = []
        for task in tasks:
            marker = marker_path(marker_dir, task)
            record = load_marker(marker)
            if record is None and known and task.id in known:
                record = known[task.id]
                if _intact(root, record):
                    write_json(marker, record)
            if record is not None and stats_kind is not None:
                try:
                    records.check_record(record["stats"], stats_kind, f"{marker}: stats")
                except DataError as error:
                    raise DataError(f"{error} (delete the marker, and its task runs again)") from None
            if _intact(root, record):
                results[task.id] = record["stats"]
                if on_done:
                    on_done(task, results[task.id], True)
            else:
                storage.remove(marker, missing_ok=True)
                todo.append(task)
        for task, record in self._map(fn, todo, marker_dir, root):
            results[task.id] = record["stats"]
            if on_done:
                on_done(task, results[task.id], False)
            faults.reached("task_done")
        return [results[t.id] for t in tasks]


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def marker_path(marker_dir: Path, task: Task) -> Path:
    return Path(marker_dir) / f"{task.id}.done.json"


def load_marker(path: Path) -> dict | None:
    """A task's completion marker (records kind "task_marker"), None when there is none; a damaged one is
    one line naming the file and the field."""
    try:
        return records.load_record(path, "task_marker", missing_ok=True)
    except DataError as error:
        raise DataError(f"{error} (a marker corpusprep did not write: delete it, and its task runs again)"
                        ) from None


def run_and_mark(fn: Callable[[Task], Stats], task: Task, marker_dir: Path, root: Path) -> dict:
    """Run one task, then write its marker: its stats and the size and sha256 of each output."""
    stats = fn(task)
    names = [*task.outputs, *stats.pop(OUTPUTS_KEY, ())]
    outputs = {}
    for name in names:
        path = root / name
        outputs[name] = {"size": storage.stat(path).st_size, "sha256": sha256_file(path)}
    record = {"stats": stats, "outputs": outputs}
    write_json(marker_path(marker_dir, task), record)
    return record


def _intact(root: Path, record: dict | None) -> bool:
    """Every output of a task's record (a checked marker, or a checked manifest's task) there, its size."""
    if record is None:
        return False
    for name, entry in record["outputs"].items():
        path = records.inside(root, name)
        if not storage.is_file(path) or storage.stat(path).st_size != entry["size"]:
            return False
    return True


def merge_stats(parts: Iterable[Stats]) -> Stats:
    """Add per-task stats: numbers are summed, nested dicts merged key by key, lists concatenated. Stats of
    two shapes at one key (a task's marker edited by hand) are one DataError line, not a TypeError."""
    merged: Stats = {}
    for part in parts:
        for key, value in part.items():
            if key in merged and _shape(merged[key]) != _shape(value):
                shapes = f"{_shape(merged[key])}, {_shape(value)}"
                raise DataError(f"task stats of two shapes at {key!r} ({shapes}): a task marker corpusprep "
                                "did not write? Pass --overwrite to rebuild")
            if key not in merged:
                merged[key] = merge_stats([value]) if isinstance(value, dict) else value
            elif isinstance(value, dict):
                merged[key] = merge_stats([merged[key], value])
            elif isinstance(value, (list, int, float)) and not isinstance(value, bool):
                merged[key] = merged[key] + value  # lists concatenate, numbers add
    return merged


def _shape(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "a flag"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__
