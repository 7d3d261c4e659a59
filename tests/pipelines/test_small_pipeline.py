"""The real stages end to end on a tiny corpus: vocab -> pairs -> shards -> train -> plot -> report."""

from __future__ import annotations

import json

import pytest

from pipelines.load import load_pipeline
from pipelines.runner import run_pipeline
from tests.contexts import quiet
from tests.pipelines.helpers import DEMO, SMALL, shard_digests, small_overrides, write_small_corpus


@pytest.mark.slow
def test_small_pipeline_runs_skips_and_reruns_what_changed(tmp_path):
    pytest.importorskip("trainer.plot")
    corpus = write_small_corpus(tmp_path / "corpus.jsonl", 0.15)
    overrides = small_overrides(corpus)
    run_dir = tmp_path / "run"
    first = run_pipeline(load_pipeline(DEMO, overrides), run_dir, context=quiet(2))
    stages = {s["name"]: s for s in first["stages"]}
    assert list(stages) == ["vocab", "pairs", "shard", "train", "plot"]
    assert {s["status"] for s in stages.values()} == {"ran"}
    # Counts add up across stages: every document used or skipped, every pair becomes one example.
    pairs = stages["pairs"]["counts"]
    assert pairs["documents"] == pairs["documents_used"] + pairs["documents_skipped"] > 0
    assert stages["shard"]["counts"]["examples"] == pairs["pairs"] == pairs["is_next"] + pairs["not_next"]
    assert stages["train"]["counts"]["steps"] == 6
    assert first["curves"] and all((run_dir / c).stat().st_size > 0 for c in first["curves"])
    report = (run_dir / "report.md").read_text()
    assert "## Training curves" in report and all(f"]({c})" in report for c in first["curves"])
    assert json.loads((run_dir / "report.json").read_text()) == first
    shards = shard_digests(run_dir / "shards")

    second = run_pipeline(load_pipeline(DEMO, overrides), run_dir, context=quiet())
    assert {s["status"] for s in second["stages"]} == {"skipped"}

    third = run_pipeline(
        load_pipeline(DEMO, [*overrides, "shard.masked_lm_prob=0.2"]), run_dir, context=quiet()
    )
    assert {s["name"]: s["status"] for s in third["stages"]} == {
        "vocab": "skipped",
        "pairs": "skipped",
        "shard": "ran",
        "train": "ran",
        "plot": "ran",
    }
    assert shard_digests(run_dir / "shards").keys() == shards.keys()
    assert shard_digests(run_dir / "shards") != shards
    masked = third["stages"][2]["counts"]["masked_tokens"] / third["stages"][2]["counts"]["tokens"]
    before = stages["shard"]["counts"]["masked_tokens"] / stages["shard"]["counts"]["tokens"]
    assert masked > before  # the new setting reached the stage


@pytest.mark.slow
def test_model_exported_from_the_demo_pipeline_answers_fill_mask(tmp_path):
    """pipelines/demo.toml as shipped (the embedded corpus, cut small; a few steps), then `trainer.export`
    and a `transformers` fill-mask call, offline. A tiny model's top guess need not be right: the path must
    work end to end."""
    transformers = pytest.importorskip("transformers")
    from trainer import export

    run_dir = tmp_path / "demo"
    summary = run_pipeline(load_pipeline(DEMO, ["input.demo_mb=0.2", *SMALL]), run_dir, context=quiet())
    assert [s["name"] for s in summary["stages"]][0] == "corpus"  # the embedded corpus, built at run time
    assert export.main([str(run_dir / "train"), str(tmp_path / "hf")]) == 0
    fill = transformers.pipeline("fill-mask", model=str(tmp_path / "hf"), device="cpu")
    results = fill("Return the [MASK] of the file.", top_k=5)
    assert len(results) == 5 and all(r["sequence"].startswith("return the") for r in results)
    assert all(0 < r["score"] <= 1 for r in results) and results[0]["score"] >= results[-1]["score"]
