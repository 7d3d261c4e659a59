"""Imported by the forkserver alone (the executor's preload), never by a command: what its workers inherit.

A worker forked while its parent is being interrupted (Ctrl-C reaches the whole process group) fails while it
unpickles its start-up data: the parent has closed the pipe or unlinked the pool's semaphores. The forkserver
prints such a failure with `sys.excepthook`; here it exits with status 1 and no traceback instead. The parent
reports what happened in one line ("interrupted; rerun to continue", or the task of a worker that died).
Exceptions inside tasks never reach this hook: the pool sends them to the parent.
"""

from __future__ import annotations

import sys

# What a parent's interruption makes a booting worker raise (closed pipe, unlinked semaphore, the Ctrl-C
# itself); anything else is a real fault and keeps its traceback, so it is not mistaken for the OOM killer.
INTERRUPTED_BOOT = (KeyboardInterrupt, EOFError, OSError)


def _quiet(kind: type[BaseException], error: BaseException, traceback: object) -> None:
    """A worker that could not start because its parent is going away says nothing; its parent says why."""
    if not issubclass(kind, INTERRUPTED_BOOT):
        sys.__excepthook__(kind, error, traceback)


sys.excepthook = _quiet
