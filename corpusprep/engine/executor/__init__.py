"""Where a stage's tasks run: one executor object, built once from the engine settings and passed down.

`ENGINES` is the one table of engines (name -> "module:class", imported on use: `corpusprep --help` imports
no engine). `ExecutorOptions` holds the engine settings and checks them, once, for every command and the
pipeline runner; `.build()` gives the `Executor`. A stage driver receives an executor and never sees an
engine's name: adding an engine is one module (an `Executor` subclass) and one line here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, fields

from corpusprep.engine.executor.base import (
    OUTPUTS_KEY,
    Executor,
    Stats,
    Task,
    default_workers,
    load_marker,
    marker_path,
    merge_stats,
)
from corpusprep.engine.executor.local import LocalExecutor, death
from corpusprep.errors import UsageError

__all__ = ["DEFAULT_ENGINE", "ENGINES", "OUTPUTS_KEY", "Executor", "ExecutorOptions", "LocalExecutor",
           "Stats", "Task", "death", "default_workers", "engine_class", "executor_for", "load_marker",
           "marker_path", "merge_stats", "run_tasks"]

ENGINES = {
    "local": "corpusprep.engine.executor.local:LocalExecutor",  # a process pool on this machine
    "ray": "corpusprep.engine.executor.ray:RayExecutor",  # a Ray cluster (pip install 'corpusprep[ray]')
}
DEFAULT_ENGINE = next(iter(ENGINES))


def engine_class(name: str) -> type[Executor]:
    """The executor class registered as `name` (its module imported now, not at start-up)."""
    module, _, cls = ENGINES[name].partition(":")
    return getattr(importlib.import_module(module), cls)


@dataclass(frozen=True)
class ExecutorOptions:
    """The engine settings (--engine, --workers, --ray-address), checked here and nowhere else: an unknown
    engine, a setting the engine does not take, or a negative number of workers is one line (exit 2).
    A new engine setting is one field here and the same name in its executor's `settings`."""

    engine: str = DEFAULT_ENGINE
    workers: int | None = None  # None or 0: the engine's default (local: a process per core; Ray: all CPUs)
    ray_address: str | None = None  # a cluster to join ("auto", "ray://host:10001"); None: start one

    def __post_init__(self) -> None:
        name = self.engine.lower() if isinstance(self.engine, str) else self.engine
        if name not in ENGINES:
            raise UsageError(f"unknown engine {self.engine!r}: choose one of {', '.join(ENGINES)}")
        object.__setattr__(self, "engine", name)
        if isinstance(self.workers, bool) or not isinstance(self.workers, (int, type(None))) or (
                self.workers or 0) < 0:
            raise UsageError(f"--workers {self.workers!r}: must be a whole number >= 0")
        object.__setattr__(self, "workers", self.workers or None)
        takes = engine_class(name).settings
        for key in (f.name for f in fields(self) if f.name not in ("engine", "workers")):  # engine-specific
            if getattr(self, key) is not None and key not in takes:
                wanted = " or ".join(f"--engine {e}" for e in ENGINES if key in engine_class(e).settings)
                raise UsageError(f"--{key.replace('_', '-')} needs {wanted}")

    def build(self) -> Executor:
        return engine_class(self.engine).from_options(self)


def executor_for(executor: Executor | None, workers: int | None = None) -> Executor:
    """The executor a library call runs on: the one it was given, else (the library default, as before
    engines were objects) the local pool with `workers` processes."""
    if executor is not None and workers is not None:
        raise TypeError("pass an executor or a number of workers, not both")
    return executor if executor is not None else LocalExecutor(workers)


def run_tasks(fn, tasks, *, executor: Executor | None = None, workers: int | None = None, **options) -> list:
    """`Executor.run` on `executor`, or on the local pool with `workers` processes (see `executor_for`)."""
    return executor_for(executor, workers).run(fn, tasks, **options)
