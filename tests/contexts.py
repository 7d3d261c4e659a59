"""The run context the tests hand the stage drivers (`corpusprep.engine.stage.RunContext`): no progress bars,
and a local pool of `workers` processes (1: the tasks run in the test's process, one by one)."""

from __future__ import annotations

from typing import Any

from corpusprep.engine.executor import LocalExecutor
from corpusprep.engine.stage import RunContext


def quiet(workers: int | None = None, **settings: Any) -> RunContext:
    return RunContext(LocalExecutor(workers), progress=False, **settings)
