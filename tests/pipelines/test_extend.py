"""What a changed setting does, said before it is done; and `--extend`, which continues a finished training
whose schedule grew from its last checkpoint instead of starting it over (pipelines/changes.py,
TrainStage.continuation)."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from corpusprep.errors import UsageError
from pipelines import stages
from pipelines.load import load_pipeline
from tests.pipelines.conftest import DEMO_RUN, run_demo
from tests.pipelines.helpers import DEMO


def said(run_dir, *overrides, **kwargs) -> tuple[dict, str]:
    out = io.StringIO()
    report = run_demo(run_dir, *overrides, console=Console(file=out, width=300), **kwargs)
    return report, out.getvalue()


def statuses(report: dict) -> dict[str, str]:
    return {s["name"]: s["status"] for s in report["stages"]}


def metrics(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "train" / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_extend_continues_a_finished_run_from_its_last_checkpoint(demo_run):
    run_dir, _ = demo_run
    before = metrics(run_dir)
    report, text = said(run_dir, "train.schedule.steps=20", extend=True)
    line = "train: train.schedule.steps changed 6 -> 20: continues from step 6 (--extend); after it: plot"
    assert line in text
    assert statuses(report) == {"corpus": "skipped", "vocab": "skipped", "pairs": "skipped",
                                "shard": "skipped", "train": "ran", "plot": "ran"}
    train = {s["name"]: s for s in report["stages"]}["train"]["counts"]
    assert (train["steps"], train["continued_from_step"]) == (20, 6)
    after = metrics(run_dir)  # the first run's records kept, the continuation's after them
    assert after[: len(before)] == before and after[len(before)]["step"] == 7 and after[-1]["step"] == 20
    assert (run_dir / "train/checkpoints/step-0000020").is_dir()
    report = run_demo(run_dir, "train.schedule.steps=20")  # now complete under those settings
    assert set(statuses(report).values()) == {"skipped"}


@pytest.mark.slow
def test_a_changed_limit_without_extend_says_training_restarts_and_claims_its_own_files(demo_run, capfd):
    run_dir, _ = demo_run
    report, text = said(run_dir, "train.schedule.steps=8")
    assert ("train: train.schedule.steps changed 6 -> 8: training restarts from step 0 (--extend continues "
            "from step 6 instead); after it: plot") in text
    assert metrics(run_dir)[0]["step"] == 1 and statuses(report)["train"] == "ran"
    # the old curves are the plot stage's own: replaced, never "left in place, not written by corpusprep"
    assert "left in place" not in capfd.readouterr().err
    assert sorted(p.name for p in (run_dir / "plot").iterdir() if not p.name.startswith(".")) == [
        "artifact.json", "curves.png"]


@pytest.mark.slow
def test_extend_refuses_what_it_cannot_continue_before_anything_is_written(demo_run):
    run_dir, _ = demo_run
    files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != ".corpusprep.lock"}
    refusals = {
        ("train.schedule.steps=20", "train.optim.lr=0.002"): "train.optim.lr changed",
        ("train.schedule.steps=4",): "schedule.steps 6 -> 4",
        ("train.schedule.steps=20", "shard.masked_lm_prob=0.2"): "it reads what shard rebuilds",
        ("train.schedule.budget='1h'",): "schedule.budget",
    }
    for overrides, why in refusals.items():
        with pytest.raises(UsageError, match=f"^--extend: train: {why}"):
            run_demo(run_dir, *overrides, extend=True)
        assert {p: p.read_bytes() for p in files} == files
    with pytest.raises(UsageError, match="pick one"):
        run_demo(run_dir, extend=True, overwrite=True)
    # a run that had a budget too (here: as if), whose steps stopped it: more budget alone trains nothing
    pipeline = load_pipeline(DEMO, [*DEMO_RUN, "train.schedule.budget='2h'"])
    previous = json.loads((run_dir / "stages" / "train.done.json").read_text())
    previous["settings"]["train"]["schedule"]["budget"] = "1h"
    dirs = {s.name: run_dir / s.output for s in pipeline.stages}
    with pytest.raises(UsageError, match="at step 6 the run is finished under the new schedule too"):
        stages.STAGE_KINDS["train"].continuation(pipeline.stage("train"), dirs, previous)
