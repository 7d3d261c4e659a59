"""The Ray engine: tasks as Ray tasks, on a cluster (`ray_address`) or a private one on this machine.

Every worker must be able to import the stage function's module (corpusprep installed on every node) and read
and write the task's paths (a shared file system, the marker directory included). Ray is imported only when
a stage runs on it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from corpusprep.engine.executor.base import Executor, Task, default_workers, run_and_mark
from corpusprep.errors import UsageError, printable


class RayExecutor(Executor):
    """`workers`: the most tasks in flight at once (None or 0: as many as the cluster has CPUs).
    `ray_address`: an existing cluster ("auto" or "ray://host:10001"); None starts a local one."""

    name = "ray"
    settings = ("ray_address",)

    def __init__(self, workers: int | None = None, ray_address: str | None = None) -> None:
        super().__init__(workers)
        self.ray_address = ray_address

    def _map(self, fn, tasks: Sequence[Task], marker_dir: Path, root: Path) -> Iterator:
        return _run_ray(fn, tasks, marker_dir, root, self.workers, self.ray_address)


def init_ray(address: str | None, num_cpus: int | None = None) -> None:
    """Join the cluster at `address`, or start a local one with `num_cpus` CPUs; no-op if already joined."""
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'corpusprep[ray]'") from None
    if ray.is_initialized():
        return
    if not address and any(c.isspace() for c in sys.executable):
        # Ray's raylet splits the worker's command line on spaces: the workers never start and ray.init's
        # tasks fail after minutes of retries (ray-project/ray#5288, #33047)
        python = printable(sys.executable)
        raise UsageError(f"--engine ray: Ray cannot start local workers from a Python whose path has a "
                         f"space ({python}); move the environment, or use --engine local")
    try:
        if address:
            # Nodes of an existing cluster import corpusprep from their own installation.
            ray.init(address=address, log_to_driver=False)
        else:
            # Local workers get the driver's sys.path, so a source checkout (or a test module) imports too.
            roots = dict.fromkeys([os.getcwd(), *sys.path])
            path = os.pathsep.join(p for p in roots if p and Path(p).is_dir())
            ray.init(
                num_cpus=num_cpus or default_workers(),
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": path}},
            )
    except ConnectionError as error:
        raise UsageError(f"--ray-address {address}: cannot join the Ray cluster ({error})") from None


def _run_ray(
    fn, tasks: Sequence[Task], marker_dir: Path, root: Path, workers: int | None, address: str | None
) -> Iterator:
    if not tasks:
        return
    init_ray(address, workers)
    import ray
    from ray.exceptions import RayTaskError

    # max_retries re-runs a task whose worker or node died (its outputs are atomic, so a retry is safe);
    # an exception raised by the stage itself is not retried: it is a bug or bad data, and fails the run.
    remote = ray.remote(num_cpus=1, max_retries=2)(run_and_mark)
    fn_ref = ray.put(fn)
    queue = list(reversed(tasks))
    limit = workers or len(tasks)
    pending: dict[Any, Task] = {}
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                task = queue.pop()
                pending[remote.remote(fn_ref, task, marker_dir, root)] = task
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                task = pending.pop(ref)
                try:
                    stats = ray.get(ref)
                except RayTaskError as error:
                    # Re-raise the stage's own exception (a DataError stays a one-line error for the CLI).
                    cause = getattr(error, "cause", None)
                    raise (cause if isinstance(cause, Exception) else error) from None
                yield task, stats
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
