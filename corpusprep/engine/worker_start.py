"""Imported by the forkserver alone (the executor's preload), never by a command: what its workers inherit.

A worker forked while its parent is being interrupted (Ctrl-C reaches the whole process group) fails while it
unpickles its start-up data: the parent has closed the pipe or unlinked the pool's semaphores. The forkserver
prints such a failure with `sys.excepthook`; here it exits with status 1 and no traceback instead. The parent
reports what happened in one line ("interrupted; rerun to continue", or the task of a worker that died).
Exceptions inside tasks never reach this hook: the pool sends them to the parent.
"""

from __future__ import annotations

import sys


def _quiet(*exc_info: object) -> None:
    """A worker that could not start says nothing; its parent says why."""


sys.excepthook = _quiet
