"""The skeleton every stage driver follows (build-pairs, shard, vocab, curate), and how a stage runs:

    identity = {...}                                   # everything the output's bytes depend on
    with stage_run(out, "pairs", identity, inputs=..., context=context) as run:
        if run.complete is not None:                   # built before from the same identity: reuse it
            return ...
        stats = run.phase("tokenize", tokenize_task, tasks, unit="docs", seconds=...)   # tasks, resumable
        ...                                            # merge the tasks' stats, write the summary files
        run.commit(files=["stats.json"])               # the manifest, last: the output is complete

`stage_run` is the output's `Artifact` (skip, resume, repair, refuse or overwrite: engine.artifact) and the
command's one progress `Reporter`; a phase runs its tasks on the executor the caller built (sized to the
phase's work, or in this process) with a bar. The driver never sees an engine's name nor a progress bar.

`RunContext` is how (never what) a stage runs: its executor, whether it may overwrite, whether it shows
progress. A command builds one from its flags, the pipeline runner one per stage (`StageContext` is one),
and every driver takes it whole, so a new setting of that kind is one field here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from corpusprep.engine.artifact import Artifact
from corpusprep.engine.executor import Executor, LocalExecutor, Stats, Task
from corpusprep.engine.outputs import OutputKind
from corpusprep.engine.progress import Reporter


@dataclass(frozen=True)
class RunContext:
    """How a stage runs, never what it computes (its bytes are the same whatever these are)."""

    # where its tasks run (default: the local pool, a process per core; `LocalExecutor(1)`: in this process)
    executor: Executor = field(default_factory=LocalExecutor)
    # rebuild an output made from other inputs or options instead of refusing (only what it owns is removed)
    overwrite: bool = False
    progress: bool = True  # progress bars on stderr


@dataclass
class StageRun:
    """One run of a stage: its artifact, the executor its phases run on, its progress reporter."""

    artifact: Artifact
    executor: Executor
    reporter: Reporter

    @property
    def complete(self) -> dict | None:
        """The finished output's manifest when it is already built with this identity, else None."""
        return self.artifact.complete

    @property
    def work(self) -> Path:
        """The output's work directory (intermediate files, task markers), removed by commit."""
        return self.artifact.work

    def phase(
        self,
        name: str,
        fn: Callable[[Task], Stats],
        tasks: Sequence[Task],
        *,
        unit: str,
        count: Callable[[dict], int] | None = None,
        seconds: float | None = None,
        local: bool = False,
        stats_kind: str | None = None,
    ) -> list[Stats]:
        """Run the phase's tasks not yet done (each task's stats, in task order) with a progress bar of
        `unit`s (`count(stats)` per task). `seconds`: the phase's work in one process (a small phase runs
        in-process: `Executor.sized`); `local`: in this process whatever the executor (a task that drives
        the reporter itself). `stats_kind`: the records kind its stats are checked against on reuse."""
        executor = LocalExecutor(1) if local else self.executor
        if seconds is not None:
            executor = executor.sized(seconds)
        on_done = None if local else self.reporter.phase(name, len(tasks), unit, count)
        return self.artifact.run(fn, tasks, executor, on_done=on_done, stats_kind=stats_kind)

    def outputs(self) -> dict[str, dict]:
        """Size and sha256 of every task output recorded so far."""
        return self.artifact.outputs()

    def commit(self, files: Iterable[str] = (), record: dict | None = None) -> dict:
        """Write the manifest (last) owning every task output and `files`: the output is complete."""
        return self.artifact.commit(files=files, record=record)


@contextmanager
def stage_run(
    out: str | Path,
    kind: str | OutputKind,
    identity: dict,
    *,
    inputs: Iterable[str | Path],
    context: RunContext | None = None,
    command: str | None = None,
    part_of: str | Path | None = None,
) -> Iterator[StageRun]:
    """The output `out` of `kind` (a row of engine.outputs.OUTPUT_KINDS: what it owns) under the artifact
    rule, run as `context` says (default: `RunContext()`), with one progress reporter (see the module)."""
    context = context or RunContext()
    artifact = Artifact(out, kind, identity, inputs=inputs, overwrite=context.overwrite, command=command,
                        part_of=part_of)
    with artifact, Reporter(context.progress) as reporter:
        yield StageRun(artifact, context.executor, reporter)
