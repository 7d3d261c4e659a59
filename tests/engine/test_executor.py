"""The executors only schedule: same outputs and stats whatever the engine and worker count; reruns skip."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from corpusprep.engine.executor import ExecutorOptions, Task, marker_path, merge_stats, run_tasks
from corpusprep.engine.files import atomic_path
from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError, UsageError
from tests.conftest import local_ray


def toy_stage(task: Task) -> dict:
    """Writes a seeded random file per task, as a real stage writes one partition."""
    out_dir, rows = task.args
    if rows < 0:
        raise DataError(f"{task.id}: negative row count {rows}")
    data = rng_for(7, "toy", task.id).integers(0, 2**16, size=rows, dtype="uint16").tobytes()
    with atomic_path(Path(out_dir) / f"{task.id}.bin") as tmp:
        tmp.write_bytes(data)
    return {"rows": rows, "bytes": len(data), "by_size": {"big" if rows > 500 else "small": 1}}


def tasks_for(out_dir: Path, n: int = 6) -> list[Task]:
    return [Task(f"part-{i:05d}", (str(out_dir), 100 * (i + 1))) for i in range(n)]


def digests(out_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out_dir.glob("*.bin"))}


def run(tmp_path: Path, name: str, **kwargs) -> tuple[list[dict], dict[str, str]]:
    out = tmp_path / name
    stats = run_tasks(toy_stage, tasks_for(out), marker_dir=out / "_markers", **kwargs)
    return stats, digests(out)


def test_local_outputs_do_not_depend_on_worker_count(tmp_path):
    stats_1, files_1 = run(tmp_path, "w1", workers=1)
    stats_2, files_2 = run(tmp_path, "w2", workers=2)
    assert len(files_1) == 6
    assert files_1 == files_2
    assert stats_1 == stats_2  # returned in task order, not completion order
    assert [s["rows"] for s in stats_1] == [100, 200, 300, 400, 500, 600]


def test_rerun_skips_marked_tasks_and_reuses_their_stats(tmp_path):
    out = tmp_path / "out"
    tasks = tasks_for(out)
    first = run_tasks(toy_stage, tasks, marker_dir=out / "_markers", workers=1)
    # Forget one task, as if the run had been killed before it finished.
    (out / "part-00003.bin").unlink()
    marker_path(out / "_markers", tasks[3]).unlink()
    seen = []

    def on_done(task, stats, skipped):
        seen.append((task.id, skipped))

    second = run_tasks(toy_stage, tasks, marker_dir=out / "_markers", workers=1, on_done=on_done)
    assert second == first
    assert sorted(seen) == [(t.id, t.id != "part-00003") for t in tasks]
    assert (out / "part-00003.bin").exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_stage_error_reaches_the_caller_unchanged(tmp_path, workers):
    tasks = [*tasks_for(tmp_path / "o", 2), Task("bad", (str(tmp_path / "o"), -1))]
    with pytest.raises(DataError, match="bad: negative row count"):
        run_tasks(toy_stage, tasks, marker_dir=tmp_path / "m", workers=workers)
    assert not marker_path(tmp_path / "m", tasks[-1]).exists()


def test_bad_engine_and_duplicate_ids_are_refused(tmp_path):
    with pytest.raises(UsageError, match="unknown engine 'spark'"):
        ExecutorOptions(engine="spark")
    with pytest.raises(ValueError, match="unique"):
        run_tasks(toy_stage, [Task("a", None), Task("a", None)], marker_dir=tmp_path / "m")


def test_merge_stats_adds_numbers_merges_dicts_concatenates_lists():
    parts = [{"n": 1, "d": {"x": 2}, "l": [1], "flag": True}, {"n": 3, "d": {"x": 1, "y": 5}, "l": [2]}]
    merged = merge_stats(parts)
    assert merged == {"n": 4, "d": {"x": 3, "y": 5}, "l": [1, 2], "flag": True}


@pytest.fixture(scope="module")
def ray_cluster():
    ray = local_ray()
    from corpusprep.engine.executor.ray import init_ray

    init_ray(None, num_cpus=2)
    yield ray
    ray.shutdown()


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_ray_gives_the_local_outputs_and_errors(tmp_path, ray_cluster):
    stats_local, files_local = run(tmp_path, "local", workers=1)
    stats_ray, files_ray = run(tmp_path, "ray", executor=ExecutorOptions("ray").build())
    assert files_ray == files_local
    assert stats_ray == stats_local
    # At most one task in flight still runs them all.
    stats_capped, files_capped = run(tmp_path, "capped", executor=ExecutorOptions("ray", 1).build())
    assert (stats_capped, files_capped) == (stats_local, files_local)
    with pytest.raises(DataError, match="bad: negative row count"):
        run_tasks(toy_stage, [Task("bad", (str(tmp_path), -1))], marker_dir=tmp_path / "m",
                  executor=ExecutorOptions("ray").build())
