"""The runner's bookkeeping on stand-in stages: skip what is complete and current, rerun what changed."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from corpusprep.errors import DataError, UsageError
from pipelines import stages
from pipelines.config import load_pipeline
from pipelines.runner import run_pipeline
from pipelines.stages import StageKind, StageResult

PIPELINE = """
[pipeline]
name = "toy"
seed = 3

[input]
paths = ["{corpus}"]

[vocab]
size = 10

[pairs]
dupe = 2

[shard]
rows = 4

[train]
steps = 5

[phases.short.pairs]
length = 128

[phases.long.pairs]
length = 512
"""


@pytest.fixture
def calls(monkeypatch) -> Counter:
    """Replace every stage by one that writes a digest of its settings and inputs, and count the calls."""
    counter: Counter = Counter()

    def fake(stage, ctx) -> StageResult:
        counter[stage.name] += 1
        ctx.out.mkdir(parents=True, exist_ok=True)
        upstream = [
            (ctx.dirs[n] / f"{n}.txt").read_text() if n in ctx.dirs else Path(ctx.inputs[0]).read_text()
            for n in stage.needs.values()
        ]
        digest = hashlib.sha256(json.dumps([stage.settings, upstream], sort_keys=True).encode()).hexdigest()
        (ctx.out / f"{stage.name}.txt").write_text(digest)
        return StageResult({"items": 10}, unit="items", files=(f"{stage.name}.txt",))

    class Fake(StageKind):
        def check(self, stage) -> None:  # the toy settings are no real options
            pass

        def run(self, stage, ctx) -> StageResult:
            return fake(stage, ctx)

        def validate(self, stage, ctx) -> list[str]:
            return []

    for kind in stages.KINDS:
        monkeypatch.setitem(stages.KINDS, kind, Fake())
    return counter


@pytest.fixture
def toml(tmp_path) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Some text.\n")
    path = tmp_path / "toy.toml"
    path.write_text(PIPELINE.format(corpus=corpus))
    return path


def run(toml: Path, run_dir: Path, *overrides: str, **kwargs) -> dict:
    return run_pipeline(load_pipeline(toml, list(overrides)), run_dir, progress=False, **kwargs)


def statuses(report: dict) -> dict[str, str]:
    return {s["name"]: s["status"] for s in report["stages"]}


def test_second_run_skips_everything_and_touches_no_output(toml, tmp_path, calls):
    run_dir = tmp_path / "run"
    first = run(toml, run_dir)
    names = [
        "vocab",
        "pairs-short",
        "shard-short",
        "train-short",
        "plot-short",
        "pairs-long",
        "shard-long",
        "train-long",
        "plot-long",
    ]
    assert [s["name"] for s in first["stages"]] == names
    assert set(statuses(first).values()) == {"ran"}
    outputs = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*.txt")}
    calls.clear()
    second = run(toml, run_dir)
    assert not calls
    assert set(statuses(second).values()) == {"skipped"}
    assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*.txt")} == outputs
    # The skipped stages report what the run that made them measured.
    assert [s["counts"] for s in second["stages"]] == [s["counts"] for s in first["stages"]]
    report = (run_dir / "report.md").read_text()
    assert "complete (skipped)" in report and "pairs-long" in report


def test_a_changed_setting_reruns_that_stage_and_what_depends_on_it(toml, tmp_path, calls):
    run_dir = tmp_path / "run"
    run(toml, run_dir)
    calls.clear()
    report = run(toml, run_dir, "phases.short.pairs.length=64")
    # The long phase trains from the short phase's weights, so its training reruns; its data does not.
    assert set(calls) == {
        "pairs-short",
        "shard-short",
        "train-short",
        "plot-short",
        "train-long",
        "plot-long",
    }
    assert statuses(report)["pairs-long"] == "skipped"
    calls.clear()
    run(toml, run_dir, "shard.rows=8")  # shared by both phases; the pairs setting is back to its file value
    assert set(calls) == {
        "pairs-short",
        "shard-short",
        "train-short",
        "plot-short",
        "shard-long",
        "train-long",
        "plot-long",
    }


def test_changed_input_or_lost_output_reruns(toml, tmp_path, calls):
    run_dir = tmp_path / "run"
    run(toml, run_dir)
    calls.clear()
    (run_dir / "long" / "shards" / "shard-long.txt").unlink()
    run(toml, run_dir)
    assert set(calls) == {"shard-long"}  # its output is deterministic: later stages stay valid
    calls.clear()
    corpus = Path(load_pipeline(toml).config["input"]["paths"][0])
    corpus.write_text("Other text, other size.\n")
    run(toml, run_dir)
    assert sum(calls.values()) == 9


def test_until_stops_after_a_stage_or_a_kind(toml, tmp_path, calls):
    report = run(toml, tmp_path / "run", until="shard")
    assert [s["name"] for s in report["stages"]] == [
        "vocab",
        "pairs-short",
        "shard-short",
        "pairs-long",
        "shard-long",
    ]
    report = run(toml, tmp_path / "run", until="pairs-short")
    assert statuses(report) == {"vocab": "skipped", "pairs-short": "skipped"}
    with pytest.raises(UsageError, match="--until 'nope'"):
        run(toml, tmp_path / "run", until="nope")


def test_invalid_output_fails_the_run_and_leaves_no_marker(toml, tmp_path, calls, monkeypatch):
    bad = ["shard-00000.parquet: bad checksum"]
    monkeypatch.setattr(stages.KINDS["shard"], "validate", lambda stage, ctx: bad)  # this stage's stand-in
    with pytest.raises(DataError, match="shard-short output failed validation: shard-00000.parquet: bad"):
        run(toml, tmp_path / "run")
    assert not (tmp_path / "run" / "stages" / "shard-short.done.json").exists()
    assert (tmp_path / "run" / "stages" / "pairs-short.done.json").exists()


def test_run_dir_of_something_else_is_refused_without_overwrite(toml, tmp_path, calls):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError, match="not a corpusprep run directory; pass --overwrite"):
        run(toml, foreign)
    assert [p.name for p in foreign.iterdir() if not p.name.startswith(".")] == ["notes.txt"]
    assert not calls
    run(toml, tmp_path / "run")
    other = toml.with_name("other.toml")
    other.write_text(toml.read_text().replace('name = "toy"', 'name = "other"'))
    with pytest.raises(UsageError, match="holds a run of pipeline 'toy', not 'other'"):
        run(other, tmp_path / "run")
    calls.clear()
    report = run(other, tmp_path / "run", overwrite=True)
    assert set(statuses(report).values()) == {"ran"}
