"""The local engine: a process pool on this machine (forkserver workers), or this process for one worker.

Ctrl-C stops the workers at once (outputs are atomic: a rerun resumes); a worker that dies (the OOM killer,
a signal) is one line naming its task and how it died.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from corpusprep.engine import faults, storage
from corpusprep.engine.executor.base import Executor, Stats, Task, default_workers, run_and_mark
from corpusprep.errors import DataError

# CPU and wall seconds to start a worker pool: a forkserver importing the stage's modules (numpy, pyarrow),
# its workers' first steps (2 vCPU EPYC: build-pairs on 10 MB with 2 workers, two pools, +0.65 CPU-s).
POOL_START_SECONDS = 0.6


class LocalExecutor(Executor):
    """`workers` processes (None or 0: one per available core); with one worker, or one task, the tasks run
    in this process, one after another."""

    name = "local"

    def sized(self, seconds: float) -> Executor:
        """With the default number of workers: one (no pool) unless a pool, after its start-up (which it also
        adds in CPU time), saves a quarter of the wall time. An explicit number of workers is kept."""
        if self.workers:
            return self
        cores = default_workers()
        pays = cores > 1 and POOL_START_SECONDS + seconds / cores < 0.75 * seconds
        return self if pays else LocalExecutor(1)

    def _map(self, fn, tasks: Sequence[Task], marker_dir: Path, root: Path) -> Iterator:
        return _run_local(fn, tasks, marker_dir, root, max(1, self.workers or default_workers()))


def _run_local(fn, tasks: Sequence[Task], marker_dir: Path, root: Path, workers: int) -> Iterator:
    if workers == 1 or len(tasks) <= 1:
        for task in tasks:
            yield task, run_and_mark(fn, task, marker_dir, root)
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
    """`run_and_mark` in a pool worker, which first notes its task under its pid: should the worker be
    killed (the OOM killer), the parent can say which task it was running."""
    storage.write_text(Path(marker_dir) / f".running-{os.getpid()}", task.id)
    return run_and_mark(fn, task, marker_dir, root)


def _worker_died(processes: list, marker_dir: Path, fallback: str) -> DataError:
    """One line for a broken pool: the task of the dead worker and how it died, by name. Only SIGKILL is the
    out-of-memory killer's signal; SIGTERM is another process's request (a shutdown, a job scheduler)."""
    # the pool terminates (SIGTERM) the other workers once one has died: look at those last
    for process in sorted(processes, key=lambda p: p.exitcode == -signal.SIGTERM):
        code = process.exitcode
        if code:
            running = Path(marker_dir) / f".running-{process.pid}"
            unknown = f"{fallback} (or another one in flight)"
            task = storage.read_text(running) if storage.is_file(running) else unknown
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
