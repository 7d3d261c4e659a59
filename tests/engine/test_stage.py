"""The stage skeleton (`engine.stage`): identity -> artifact -> phases of tasks (on the caller's executor,
sized to the phase, with one progress reporter) -> commit; a rerun with the same identity is complete."""

from __future__ import annotations

from pathlib import Path

from corpusprep.engine.executor import LocalExecutor, Task
from corpusprep.engine.outputs import OutputKind
from corpusprep.engine.stage import RunContext, stage_run
from tests.contexts import quiet
from tests.engine.test_executor import digests, toy_stage

# a kind of output of this test's own: what a producer registers in engine.outputs.OUTPUT_KINDS
TOY = OutputKind("toy", "toy", "a toy output", "toy directory", "corpusprep.validate:validate_artifact",
                 artifact=True, owns=("*.bin",))


def toy_tasks(out: Path, n: int = 4) -> list[Task]:
    return [Task(f"part-{i:05d}", (str(out), 100 * (i + 1)), outputs=(f"part-{i:05d}.bin",))
            for i in range(n)]


class Recording(LocalExecutor):
    """The local engine in one process, remembering what each phase was sized to."""

    sizes: list[float] = []

    def sized(self, seconds: float) -> LocalExecutor:
        Recording.sizes.append(seconds)
        return LocalExecutor(1)


class Reporter:
    """Records the bars a stage asks for and what each task reports."""

    def __init__(self) -> None:
        self.phases: list[tuple[str, int | None, str]] = []
        self.items: list[int] = []

    def phase(self, name, total, unit, count=None):
        self.phases.append((name, total, unit))
        return lambda task, stats, skipped: self.items.append(count(stats))


def test_a_stage_runs_its_phases_commits_and_is_complete_when_run_again(tmp_path):
    out = tmp_path / "toy"
    with stage_run(out, TOY, {"n": 4}, inputs=(), context=quiet(1)) as run:
        assert run.complete is None and run.work == out / ".work"
        stats = run.phase("toy", toy_stage, toy_tasks(out), unit="rows", stats_kind=None)
        assert [s["rows"] for s in stats] == [100, 200, 300, 400]
        assert sorted(run.outputs()) == [f"part-{i:05d}.bin" for i in range(4)]
        manifest = run.commit()
    assert sorted(manifest["files"]) == [f"part-{i:05d}.bin" for i in range(4)]
    assert not (out / ".work").exists()
    first = digests(out)
    with stage_run(out, TOY, {"n": 4}, inputs=(), context=quiet()) as again:
        assert again.complete is not None and again.complete["fingerprint"] == manifest["fingerprint"]
    assert digests(out) == first


def test_a_phase_is_sized_reported_and_local_phases_run_here(tmp_path):
    out, Recording.sizes = tmp_path / "toy", []
    with stage_run(out, TOY, {"n": 3}, inputs=(), context=RunContext(Recording(2), progress=False)) as run:
        run.reporter = reporter = Reporter()
        run.phase("toy", toy_stage, toy_tasks(out, 3), unit="rows", count=lambda s: s["rows"], seconds=0.5)
        assert Recording.sizes == [0.5]
        assert reporter.phases == [("toy", 3, "rows")] and sorted(reporter.items) == [100, 200, 300]
        here = [Task("here", (str(out), 50), outputs=("here.bin",))]
        (stats,) = run.phase("here", toy_stage, here, unit="rows", local=True)  # no bar: it drives its own
        assert stats["rows"] == 50 and reporter.phases == [("toy", 3, "rows")] and Recording.sizes == [0.5]
