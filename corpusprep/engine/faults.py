"""The one fault-injection point, for the reliability tests: SIGKILL this process at a named point.

Set `CORPUSPREP_FAULT="POINT:N"` in a child process's environment to kill it the N-th time it reaches POINT
(counted from 1 within the process), as an OOM kill or a pulled plug would. Points:

- `task_done`: the executor has recorded a finished task (counted across every stage of the process);
- `pool_started`: the executor has started its worker processes (they are still booting);
- `artifact_committed`: an artifact's manifest is written, its work directory not yet removed;
- `checkpoint_file`: the trainer has written one state file of a checkpoint (before the directory is
  renamed into place);
- `model_file`: `trainer.export` or `trainer.import_hf` has renamed one of its files (an import: its vocab
  directory) into place, its manifest not yet written.

Unset (always, outside the tests) it costs one dictionary lookup per call.
"""

from __future__ import annotations

import os
import signal

ENV = "CORPUSPREP_FAULT"
_seen: dict[str, int] = {}


def spec(point: str, count: int) -> dict[str, str]:
    """The environment entry that kills a process the `count`-th time it reaches `point`."""
    return {ENV: f"{point}:{count}"}


def reached(point: str) -> None:
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    name, _, count = wanted.partition(":")
    if name != point:
        return
    _seen[point] = _seen.get(point, 0) + 1
    if _seen[point] >= int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
