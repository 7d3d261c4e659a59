"""The runner's bookkeeping on stand-in stages: skip what is complete and current, rerun what changed."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import corpusprep
from corpusprep.errors import DataError, UsageError
from pipelines import stages
from pipelines.config import fingerprint
from pipelines.load import load_pipeline
from pipelines.runner import run_pipeline
from tests.contexts import quiet


def run(toml: Path, run_dir: Path, *overrides: str, overwrite: bool = False, **kwargs) -> dict:
    pipeline = load_pipeline(toml, list(overrides))
    return run_pipeline(pipeline, run_dir, context=quiet(overwrite=overwrite), **kwargs)


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
    # this stage's stand-in
    monkeypatch.setattr(stages.STAGE_KINDS["shard"], "validate", lambda stage, ctx: bad)
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


def test_before_anything_runs_it_says_which_stages_rerun_and_why(toml, tmp_path, calls):
    run_dir = tmp_path / "run"
    run(toml, run_dir)
    said = io.StringIO()
    run(toml, run_dir, "phases.short.pairs.length=64", console=Console(file=said, width=300))
    lines = said.getvalue().splitlines()
    assert lines[0] == ("pairs-short: pairs.length changed 128 -> 64: reruns; after it: shard-short, "
                        "train-short (training from step 0), plot-short, train-long (training from step 0), "
                        "plot-long")
    assert not any(line.startswith(("vocab", "pairs-long", "shard-long")) for line in lines)
    (run_dir / "long" / "shards" / "shard-long.txt").unlink()
    said = io.StringIO()
    run(toml, run_dir, "phases.short.pairs.length=64", console=Console(file=said, width=300))
    assert said.getvalue().splitlines()[0] == "shard-long: output files missing or changed: rebuilds them"


def test_extend_continues_the_phase_that_grew_and_retrains_the_phases_after_it(toml, tmp_path, calls,
                                                                                monkeypatch):
    from tests.pipelines.conftest import FakeStage

    run_dir = tmp_path / "run"
    run(toml, run_dir)
    calls.clear()
    with pytest.raises(UsageError, match="^--extend: train-short: a train stage is rebuilt, never continued"):
        run(toml, run_dir, "phases.short.train.steps=10", extend=True)
    assert not calls
    monkeypatch.setitem(stages.STAGE_KINDS, "train", FakeStage(calls, continues=5))
    said = io.StringIO()
    console = Console(file=said, width=300)
    report = run(toml, run_dir, "phases.short.train.steps=10", extend=True, console=console)
    assert said.getvalue().splitlines()[0] == (
        "train-short: train.steps changed 5 -> 10: continues from step 5 (--extend); after it: plot-short, "
        "train-long (training from step 0), plot-long")
    counts = {s["name"]: s["counts"]["continued_from"] for s in report["stages"] if s["status"] == "ran"}
    assert counts == {"train-short": True, "plot-short": False, "train-long": False, "plot-long": False}
    with pytest.raises(UsageError, match="^--extend: train-short: it reads what shard-short rebuilds"):
        run(toml, run_dir, "phases.short.train.steps=10", "shard.rows=8", extend=True)


def test_a_run_dir_of_an_older_corpusprep_says_why_its_stages_rerun_once(toml, tmp_path, calls):
    """Records made before inputs were fingerprinted by content hold the earlier stages' settings
    fingerprints: the stages after them rerun once, said so, and the skipped ones' records are completed."""
    run_dir = tmp_path / "run"
    run(toml, run_dir)
    for path in (run_dir / "stages").glob("*.done.json"):
        record = json.loads(path.read_text())
        inputs = {k: v if k == "input" else "0" * 16 for k, v in record["inputs"].items()}  # settings' fps
        old = fingerprint(record["kind"], record["settings"], inputs, corpusprep.__version__)
        path.write_text(json.dumps({k: v for k, v in record.items() if k not in ("digest", "version")}
                                   | {"inputs": inputs, "fingerprint": old}))
    calls.clear()
    said = io.StringIO()
    report = run(toml, run_dir, console=Console(file=said, width=300))
    assert said.getvalue().splitlines()[0] == (
        "pairs-short: vocab's output is not the one it was built from: reruns; after it: shard-short, "
        "train-short (training from step 0), plot-short, train-long (training from step 0), plot-long")
    assert statuses(report)["vocab"] == "skipped" and calls["pairs-short"] == 1
    assert "digest" in json.loads((run_dir / "stages" / "vocab.done.json").read_text())
    calls.clear()
    said = io.StringIO()
    report = run(toml, run_dir, console=Console(file=said, width=300))
    assert not calls and said.getvalue().startswith("[1/9] vocab: complete, skipped")  # nothing to say
