"""An engine is one module and one line in `ENGINES`: the table drives the choice, a toy engine registered
here runs build-pairs -> shard to the local engine's bytes, and the engine settings are checked once."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from corpusprep.engine import executor as engines
from corpusprep.engine.executor import Executor, ExecutorOptions, LocalExecutor, Task, run_tasks
from corpusprep.engine.executor.base import run_and_mark
from corpusprep.engine.stage import RunContext
from corpusprep.errors import UsageError
from corpusprep.pair.build import PairOptions, build_pairs
from corpusprep.read import ReadOptions
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from tests.engine.test_executor import tasks_for, toy_stage
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert


class BackwardsExecutor(Executor):
    """A toy engine: every task in this process, last task first (the order a real engine may finish them
    in), counting what it ran. Its own setting comes from `ExecutorOptions` like Ray's address."""

    name = "backwards"
    ran: list[str] = []

    def _map(self, fn, tasks: Sequence[Task], marker_dir: Path, root: Path) -> Iterator:
        for task in reversed(tasks):
            BackwardsExecutor.ran.append(task.id)
            yield task, run_and_mark(fn, task, marker_dir, root)


@pytest.fixture
def toy_engine(monkeypatch):
    """The toy engine registered as a user would register theirs: one line in the table."""
    monkeypatch.setitem(engines.ENGINES, "backwards", f"{__name__}:BackwardsExecutor")
    BackwardsExecutor.ran = []
    return BackwardsExecutor


def test_the_table_drives_the_choice(toy_engine):
    assert type(ExecutorOptions().build()) is LocalExecutor
    assert type(ExecutorOptions("Backwards", workers=3).build()) is toy_engine
    assert ExecutorOptions("backwards", workers=3).build().workers == 3
    ray = ExecutorOptions("ray", 2, "auto").build()  # the class only: Ray itself is imported when tasks run
    assert (ray.name, ray.workers, ray.ray_address) == ("ray", 2, "auto")


def test_a_toy_engine_runs_tasks_like_the_local_pool(tmp_path, toy_engine):
    local = run_tasks(toy_stage, tasks_for(tmp_path / "local"), marker_dir=tmp_path / "ml", workers=1)
    toy = ExecutorOptions("backwards").build().run(toy_stage, tasks_for(tmp_path / "toy"),
                                                   marker_dir=tmp_path / "mt")
    assert toy == local and len(toy_engine.ran) == 6
    assert digests(tmp_path / "toy") == digests(tmp_path / "local")


def digests(directory: Path, root: Path | None = None) -> dict[str, str]:
    """sha256 of every file under `directory` by relative path, `root` written as "ROOT" (a manifest names its
    inputs' paths), the artifact's own bookkeeping aside (work files, lock, artifact.json: it names paths)."""
    skip = (".work", ".lock", "artifact.json")
    return {p.relative_to(directory).as_posix():
            hashlib.sha256(p.read_bytes().replace(str(root or directory).encode(), b"ROOT")).hexdigest()
            for p in sorted(directory.rglob("*"))
            if p.is_file() and not any(part in skip for part in p.relative_to(directory).parts)}


@pytest.mark.slow  # ~1.1 s idle (all cases)
@pytest.mark.parametrize("objective", ["nsp", "none"])
def test_a_toy_engine_builds_pairs_and_shards_to_the_local_bytes(tmp_path, toy_engine, objective):
    vocab = make_vocab(tmp_path / "vocab")
    corpus = write_bert(tmp_path / "corpus.txt", synthetic_documents(120, seed=3))
    options = PairOptions(objective=objective, max_seq_length=32, docs_per_partition=20, dupe_factor=2)
    shard_options = ShardOptions(num_shards=2, dupe_masks=2)
    built = {}
    for name, executor in (("local", LocalExecutor(1)), ("toy", ExecutorOptions("backwards").build())):
        out = tmp_path / name
        context = RunContext(executor, progress=False)
        build_pairs([corpus], vocab, out / "pairs", options, ReadOptions(format="bert"), context=context)
        build_shards(out / "pairs", vocab, out / "shards", shard_options, context=context)
        built[name] = digests(out / "pairs", out), digests(out / "shards", out)
    assert any(t.startswith("tokens-") for t in toy_engine.ran)  # every stage ran on the toy engine
    assert any(t.startswith("pairs-") for t in toy_engine.ran)
    assert any(t.startswith("shard-") for t in toy_engine.ran)
    pairs, shards = built["local"]
    assert sum(f.endswith(".parquet") for f in pairs) >= 4 and any(f.endswith(".parquet") for f in shards)
    assert built["toy"] == built["local"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"engine": "spark"}, "unknown engine 'spark': choose one of local, ray"),
        ({"ray_address": "auto"}, "--ray-address needs --engine ray"),
        ({"engine": "local", "ray_address": "auto"}, "--ray-address needs --engine ray"),
        ({"workers": -1}, "--workers -1: must be a whole number >= 0"),
    ],
)
def test_engine_settings_are_checked_in_one_place(settings, message):
    with pytest.raises(UsageError) as error:
        ExecutorOptions(**settings)
    assert str(error.value) == message


@pytest.mark.parametrize("command", ["build-pairs", "run"])
def test_every_command_refuses_bad_engine_settings_in_one_line(tmp_path, command):
    """The same check, and message, for every command that takes the engine options (exit 2, before any
    work: the input paths do not even exist)."""
    argv = {"build-pairs": ["missing.txt", "--vocab", "v", "-o", str(tmp_path / "p")],
            "run": ["pipelines/demo.toml", "--run-dir", str(tmp_path / "r")]}[command]
    done = subprocess.run([sys.executable, "-m", "corpusprep", command, *argv, "--ray-address", "auto"],
                          capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert done.returncode == 2, done.stderr
    assert done.stderr == "corpusprep: error: --ray-address needs --engine ray\n"
    assert not (tmp_path / "p").exists() and not (tmp_path / "r").exists()


def test_ray_from_a_python_path_with_a_space_is_one_line_not_minutes_of_retries(monkeypatch):
    ray = pytest.importorskip("ray")
    from corpusprep.engine.executor.ray import init_ray

    if ray.is_initialized():
        pytest.skip("a Ray session of another test is open in this process")
    monkeypatch.setattr(sys, "executable", "/home/a user/venv/bin/python")
    with pytest.raises(UsageError) as caught:
        init_ray(None, num_cpus=1)
    message = str(caught.value)
    assert "\n" not in message and "/home/a user/venv/bin/python" in message and "--engine local" in message
    assert not ray.is_initialized()  # refused before starting anything
