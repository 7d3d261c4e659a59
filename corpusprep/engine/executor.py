"""Run one stage function over many tasks (partitions), locally or on Ray, skipping finished ones.

A stage function is a plain, picklable top-level function `fn(task) -> stats` over one partition that writes
its own outputs atomically. The executor alone decides what runs: it never changes what a task computes, so
the output is the same whatever the engine or the number of workers. After a task's outputs are in place its
completion marker (its stats, and the size and sha256 of each output) is written; a rerun skips a task whose
marker exists and whose outputs are intact, and reuses its stats.

With Ray, every worker must be able to import the stage function's module (corpusprep installed on every
node) and read and write the task's paths (a shared file system, the marker directory included).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpusprep.engine import faults, records
from corpusprep.engine.files import write_json
from corpusprep.errors import DataError, UsageError

Stats = dict[str, Any]
ENGINES = ("local", "ray")
OUTPUTS_KEY = "_outputs"  # a stage may list outputs it could not declare up front (relative to the root)


@dataclass(frozen=True)
class Task:
    """One unit of work: `id` is unique in its stage and a safe file name; `args` is any picklable payload;
    `outputs` are the files it writes, relative to the run's root (recorded, with sizes and checksums, in
    its marker: a task whose files are gone is run again)."""

    id: str
    args: Any
    outputs: tuple[str, ...] = ()


def check_engine(engine: str) -> str:
    """`engine` in any case as one of ENGINES; else one line naming them. Stages call it before any work."""
    name = engine.lower() if isinstance(engine, str) else engine
    if name not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    return name


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


# CPU and wall seconds to start a worker pool: a forkserver importing the stage's modules (numpy, pyarrow),
# its workers' first steps (2 vCPU EPYC: build-pairs on 10 MB with 2 workers, two pools, +0.65 CPU-s).
POOL_START_SECONDS = 0.6


def stage_workers(workers: int | None, engine: str, seconds: float) -> int | None:
    """`workers` for a stage of about `seconds` of work in one process. With the default (None or 0) on the
    local engine: 1 (no pool) unless a pool, after its start-up (which it also adds in CPU time), saves a
    quarter of the wall time. An explicit number of workers is kept."""
    if workers or engine != "local":
        return workers
    cores = default_workers()
    return workers if cores > 1 and POOL_START_SECONDS + seconds / cores < 0.75 * seconds else 1


def marker_path(marker_dir: Path, task: Task) -> Path:
    return Path(marker_dir) / f"{task.id}.done.json"


def load_marker(path: Path) -> dict | None:
    """A task's completion marker (records kind "task_marker"), None when there is none; a damaged one is
    one line naming the file and the field."""
    try:
        return records.load_record(path, "task_marker", missing_ok=True)
    except DataError as error:
        raise DataError(f"{error} (a marker corpusprep did not write: delete it, and its task runs again)"
                        ) from None  # fmt: skip


def _run_and_mark(fn: Callable[[Task], Stats], task: Task, marker_dir: Path, root: Path) -> Stats:
    from corpusprep.engine.artifact import sha256_file

    stats = fn(task)
    names = [*task.outputs, *stats.pop(OUTPUTS_KEY, ())]
    outputs = {}
    for name in names:
        path = root / name
        outputs[name] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
    record = {"stats": stats, "outputs": outputs}
    write_json(marker_path(marker_dir, task), record)
    return record


def _intact(root: Path, record: dict | None) -> bool:
    """Every output of a task's record (a checked marker, or a checked manifest's task) there, its size."""
    if record is None:
        return False
    for name, entry in record["outputs"].items():
        path = records.inside(root, name)
        if not path.is_file() or path.stat().st_size != entry["size"]:
            return False
    return True


def run_tasks(
    fn: Callable[[Task], Stats],
    tasks: Sequence[Task],
    *,
    marker_dir: str | Path,
    root: str | Path | None = None,
    known: dict[str, Any] | None = None,
    workers: int | None = None,
    engine: str = "local",
    ray_address: str | None = None,
    on_done: Callable[[Task, Stats, bool], None] | None = None,
    stats_kind: str | None = None,
) -> list[Stats]:
    """Run `fn` on every task not yet done; return every task's stats in task order.

    A task is done when its marker (or its record in `known`, from an artifact's manifest) exists and
    every output it recorded is still there with its size: a deleted or truncated output reruns just
    that task. `root`: what outputs are relative to (default: the marker directory's parent).
    `workers`: local processes (None or 0: one per core); on Ray, the most tasks in flight at once
    (None or 0: as many as the cluster has CPUs). `ray_address`: an existing cluster ("auto" or
    "ray://host:10001"); None starts a local one. `on_done(task, stats, skipped)` is called in the parent
    as each task finishes (for progress bars). `stats_kind`: the records kind (engine.records) of what `fn`
    returns, against which a marker's stats are checked before they are reused.
    """
    engine = check_engine(engine)
    ids = [task.id for task in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("task ids must be unique within a stage")
    marker_dir = Path(marker_dir)
    root = Path(root) if root is not None else marker_dir.parent
    marker_dir.mkdir(parents=True, exist_ok=True)
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
            marker.unlink(missing_ok=True)
            todo.append(task)
    if engine == "local":
        finished = _run_local(fn, todo, marker_dir, root, max(1, workers or default_workers()))
    else:
        finished = _run_ray(fn, todo, marker_dir, root, workers or None, ray_address)
    for task, record in finished:
        results[task.id] = record["stats"]
        if on_done:
            on_done(task, results[task.id], False)
        faults.reached("task_done")
    return [results[t.id] for t in tasks]


def _run_local(fn, tasks: Sequence[Task], marker_dir: Path, root: Path, workers: int) -> Iterator:
    if workers == 1 or len(tasks) <= 1:
        for task in tasks:
            yield task, _run_and_mark(fn, task, marker_dir, root)
        return
    import concurrent.futures as cf  # here: a run without a pool does without them (~15 ms of start-up)

    context, parent = _pool_context(fn)
    _quiet_shutdown()
    workers = min(workers, len(tasks))
    broken = None  # the task whose future saw the pool break (a worker died)
    with cf.ProcessPoolExecutor(
        workers, mp_context=context, initializer=_worker_init, initargs=(parent,)
    ) as pool:
        futures = {pool.submit(_run_in_worker, fn, task, marker_dir, root): task for task in tasks}
        processes = list(getattr(pool, "_processes", {}).values())  # to tell which one died, if one does
        try:
            faults.reached("pool_started")  # workers are starting up: the narrowest window for orphans
            for future in cf.as_completed(futures):
                try:
                    record = future.result()
                except cf.process.BrokenProcessPool:
                    broken = futures[future].id
                    break
                yield futures[future], record
        except (KeyboardInterrupt, GeneratorExit):
            # Ctrl-C or SIGTERM here or in the caller: stop the workers now, not after their tasks (outputs
            # are atomic). No cancel(): Python 3.11's pool manager fails on the cancelled futures of a broken
            # pool, and the interpreter then hangs at exit.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
                # a stopped worker (SIGSTOP, a debugger) acts on SIGTERM only once continued: else the
                # pool's shutdown would wait for it forever
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signal.SIGCONT)
            raise
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    if broken is not None:  # after the pool's shutdown, which reaps the workers: their exit codes are known
        raise _worker_died(processes, marker_dir, broken)


def _run_in_worker(fn: Callable[[Task], Stats], task: Task, marker_dir: Path, root: Path) -> Stats:
    """`_run_and_mark` in a pool worker, which first notes its task under its pid: should the worker be
    killed (the OOM killer), the parent can say which task it was running."""
    (Path(marker_dir) / f".running-{os.getpid()}").write_text(task.id)
    return _run_and_mark(fn, task, marker_dir, root)


def _worker_died(processes: list, marker_dir: Path, fallback: str) -> DataError:
    """One line for a broken pool: the task of the dead worker and how it died, by name. Only SIGKILL is the
    out-of-memory killer's signal; SIGTERM is another process's request (a shutdown, a job scheduler)."""
    # the pool terminates (SIGTERM) the other workers once one has died: look at those last
    for process in sorted(processes, key=lambda p: p.exitcode == -signal.SIGTERM):
        code = process.exitcode
        if code:
            running = Path(marker_dir) / f".running-{process.pid}"
            task = running.read_text() if running.is_file() else f"{fallback} (or another one in flight)"
            return DataError(f"task {task}: its worker process {death(code)}")
    return DataError(f"task {fallback}: a worker process died (how is unknown); rerun to continue")


def death(code: int) -> str:
    """How a process with exit code `code` (negative: killed by that signal) ended, the likely why, and what
    to do: "was killed by SIGTERM (sent by another process: ...); rerun to continue"."""
    if code >= 0:
        return f"exited with status {code}; rerun to continue"
    name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
    if -code == signal.SIGKILL:
        return (f"was killed by {name}, most likely by the out-of-memory killer; rerun to continue (with "
                "fewer --workers if memory is short)")
    why = "sent by another process: a shutdown, a job scheduler, kill" if -code == signal.SIGTERM else (
        "a crash in native code, or sent by another process")
    return f"was killed by {name} ({why}); rerun to continue"


def _pool_context(fn: Callable) -> tuple[Any, int]:
    """The start method for pool workers and the pid their parent will have.

    Not fork: the parent may hold threads (tokenizers, torch) that fork would copy mid-lock. A forkserver is
    a fresh single-threaded process that imports the stage's module once and forks each worker from there:
    a worker then starts in milliseconds instead of paying Python's start-up and the imports (~0.35 CPU-s)
    again, which is most of the CPU time of a stage on a few MB of text. The server serves every pool of
    this process and exits when it does. Where forkserver is unavailable, spawn.
    """
    import multiprocessing as mp

    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn"), os.getpid()
    from multiprocessing import forkserver

    context = mp.get_context("forkserver")
    module = getattr(getattr(fn, "func", fn), "__module__", None)
    # Only the first call's list counts: the server, once started, is reused. pandas, when this process has
    # imported it (pyarrow does, the first time `pa.array` or `to_numpy` runs: ~0.25 CPU-s): the workers
    # will too, and then import it once, in the server, instead of once each. Otherwise not at all.
    preload = [m for m in (__name__, module, WORKER_START) if m and m != "__main__"]
    context.set_forkserver_preload([*preload, "pandas"] if "pandas" in sys.modules else preload)
    # Ctrl-C reaches the whole process group, the server too, while it imports the preload (seconds on a
    # busy machine) and before it ignores SIGINT: a traceback each. Started with SIGINT blocked, the server
    # and every worker it forks keep it blocked (the mask is inherited across fork and exec); this process
    # gets a Ctrl-C of that instant when the mask is restored, and reports it (errors.guarded).
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # first: starting it unblocks SIGINT again (it blocks it meanwhile)
    blocked = _block_sigint()
    try:
        forkserver.ensure_running()
    finally:
        _restore_sigmask(blocked)
    state = getattr(forkserver, "_forkserver", None)
    server = getattr(state, "_forkserver_pid", None)
    if not isinstance(server, int) or not hasattr(state, "_stop"):
        return mp.get_context("spawn"), os.getpid()
    global _server_reaped
    if not _server_reaped:
        # Wait for the server at exit (it ends when its pipe closes): it then counts, with every worker it
        # reaped, in this process's children's CPU time (time(1), getrusage), and outlives nothing.
        atexit.register(state._stop)
        _server_reaped = True
    return context, server


_server_reaped = False
WORKER_START = "corpusprep.engine.worker_start"  # the forkserver's own module: see its docstring


def _quiet_shutdown() -> None:
    """Once a pool has run, the interpreter's shutdown joins its threads and waits for the forkserver: a
    Ctrl-C then (the command's work done, its summary printed) would print "Exception ignored in threading"
    and a traceback, or end the process by SIGINT. From the start of the shutdown on, SIGINT is ignored."""
    global _shutdown_quiet
    if _shutdown_quiet:
        return
    # threading's own exit hooks run first in the shutdown, before threads are joined and before atexit
    register = getattr(threading, "_register_atexit", atexit.register)
    register(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    _shutdown_quiet = True


_shutdown_quiet = False


def _block_sigint() -> set | None:
    """Block SIGINT in this thread; the previous mask (None where signal masks do not exist)."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _restore_sigmask(previous: set | None) -> None:
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _worker_init(parent: int) -> None:
    """Pool workers end with their parent, in every window: otherwise a worker whose parent was killed
    (SIGKILL, OOM killer) waits forever on its queue, and a rerun would start beside it.

    The kernel kills the worker when the parent thread dies (PR_SET_PDEATHSIG); a parent that died before
    that was set is caught by comparing the parent pid with the one the parent passed (after a parent's
    death the worker is re-parented, so `getppid()` no longer matches). A watch thread covers systems
    without prctl. Ctrl-C reaches the whole process group: the parent handles it (one message, workers
    stopped), so the workers ignore it instead of each printing a traceback. With a forkserver the parent is
    the server, which exits when the process that started it dies: the chain holds.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
    with contextlib.suppress(Exception):
        # A forkserver's worker inherits the write end of the pipe whose closing ends the server: keeping it
        # would keep the server (this worker's parent) alive after the process that started it died.
        from multiprocessing import forkserver

        state = forkserver._forkserver
        fd, state._forkserver_alive_fd = state._forkserver_alive_fd, None
        if fd is not None:
            os.close(fd)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def init_ray(address: str | None, num_cpus: int | None = None) -> None:
    """Join the cluster at `address`, or start a local one with `num_cpus` CPUs; no-op if already joined."""
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'corpusprep[ray]'") from None
    if ray.is_initialized():
        return
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
    remote = ray.remote(num_cpus=1, max_retries=2)(_run_and_mark)
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


def merge_stats(parts: Iterable[Stats]) -> Stats:
    """Add per-task stats: numbers are summed, nested dicts merged key by key, lists concatenated. Stats of
    two shapes at one key (a task's marker edited by hand) are one DataError line, not a TypeError."""
    merged: Stats = {}
    for part in parts:
        for key, value in part.items():
            if key in merged and _shape(merged[key]) != _shape(value):
                shapes = f"{_shape(merged[key])}, {_shape(value)}"
                raise DataError(f"task stats of two shapes at {key!r} ({shapes}): a task marker corpusprep "
                                "did not write? Pass --overwrite to rebuild")  # fmt: skip
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
