"""Run one stage function over many tasks (partitions), locally or on Ray, skipping finished ones.

A stage function is a plain, picklable top-level function `fn(task) -> stats` that writes its own outputs
atomically. The executor only schedules: it never changes what a task computes, so the output is the same
whatever the engine or the number of workers. After a task's outputs are in place its completion marker
(holding its stats) is written; a rerun skips marked tasks and reuses their stats.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpusprep.engine.files import read_json, write_json
from corpusprep.errors import UsageError

Stats = dict[str, Any]
ENGINES = ("local", "ray")


@dataclass(frozen=True)
class Task:
    """One unit of work: `id` is unique within a stage and safe as a file name; `args` is any picklable payload."""

    id: str
    args: Any


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def marker_path(marker_dir: Path, task: Task) -> Path:
    return Path(marker_dir) / f"{task.id}.done.json"


def _run_and_mark(fn: Callable[[Task], Stats], task: Task, marker_dir: Path) -> Stats:
    stats = fn(task)
    write_json(marker_path(marker_dir, task), stats)
    return stats


def run_tasks(
    fn: Callable[[Task], Stats],
    tasks: Sequence[Task],
    *,
    marker_dir: str | Path,
    workers: int | None = None,
    engine: str = "local",
    ray_address: str | None = None,
    on_done: Callable[[Task, Stats, bool], None] | None = None,
) -> list[Stats]:
    """Run `fn` on every task not yet marked done; return every task's stats in task order.

    `on_done(task, stats, skipped)` is called in the parent as each task finishes (for progress bars).
    """
    marker_dir = Path(marker_dir)
    marker_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Stats] = {}
    todo = []
    for task in tasks:
        marker = marker_path(marker_dir, task)
        if marker.exists():
            results[task.id] = read_json(marker)
            if on_done:
                on_done(task, results[task.id], True)
        else:
            todo.append(task)
    workers = max(1, workers or default_workers())
    if engine == "local":
        finished = _run_local(fn, todo, marker_dir, workers)
    elif engine == "ray":
        finished = _run_ray(fn, todo, marker_dir, workers, ray_address)
    else:
        raise UsageError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    for task, stats in finished:
        results[task.id] = stats
        if on_done:
            on_done(task, stats, False)
    return [results[t.id] for t in tasks]


def _run_local(fn, tasks: Sequence[Task], marker_dir: Path, workers: int) -> Iterable[tuple[Task, Stats]]:
    if workers == 1 or len(tasks) <= 1:
        for task in tasks:
            yield task, _run_and_mark(fn, task, marker_dir)
        return
    # spawn, not fork: the parent may hold threads (tokenizers, torch) that fork would copy mid-lock.
    context = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context) as pool:
        futures = {pool.submit(_run_and_mark, fn, task, marker_dir): task for task in tasks}
        try:
            for future in cf.as_completed(futures):
                yield futures[future], future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _run_ray(fn, tasks: Sequence[Task], marker_dir: Path, workers: int, address: str | None):
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'corpusprep[ray]'") from None
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=2)(_run_and_mark)
    pending = {remote.remote(fn, task, marker_dir): task for task in tasks}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            yield pending.pop(ref), ray.get(ref)


def merge_stats(parts: Iterable[Stats]) -> Stats:
    """Add per-task stats: numbers are summed, nested dicts merged key by key, lists concatenated."""
    merged: Stats = {}
    for part in parts:
        for key, value in part.items():
            if key not in merged:
                merged[key] = merge_stats([value]) if isinstance(value, dict) else value
            elif isinstance(value, dict):
                merged[key] = merge_stats([merged[key], value])
            elif isinstance(value, list):
                merged[key] = merged[key] + value
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                merged[key] = merged[key] + value
    return merged
