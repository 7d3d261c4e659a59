"""pipelines/cpu-recipe.toml, the CPU recipe of BENCHMARKS.md's transfer table: it plans and passes every
stage's own check (the settings a run would use), ends in the evaluate stage with 3 seeds, fine-tunes at
the length it pre-trains, and its relative paths name the files in ../shared beside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.load import load_pipeline
from pipelines.stages import check
from tests.conftest import SHARED

RECIPE = Path(__file__).resolve().parents[2] / "pipelines" / "cpu-recipe.toml"


def test_the_recipe_plans_and_every_stage_passes_its_check():
    pipeline = load_pipeline(RECIPE, check_inputs=False)
    assert pipeline.name == "cpu-recipe"
    assert [s.kind for s in pipeline.stages] == ["vocab", "pairs", "shard", "train", "plot", "evaluate"]
    for stage in pipeline.stages:
        check(stage)  # raises UsageError on an unknown or invalid setting
    evaluate = pipeline.stage("evaluate").settings["evaluate"]
    assert evaluate.get("seeds", 3) == 3  # the table's claim: 3 seeds
    train = pipeline.stage("train").settings["train"]
    assert train["model"]["preset"] == "tiny" and train["device"] == "cpu"
    # positions beyond the pre-trained length are untrained: the evaluation must not reach them
    assert evaluate["max_length"] == pipeline.config["pairs"]["max_seq_length"]


def test_the_recipes_paths_are_the_shared_corpus_and_ud_files():
    pipeline = load_pipeline(RECIPE, check_inputs=False)
    evaluate = pipeline.stage("evaluate").settings["evaluate"]
    named = [*pipeline.config["input"]["paths"], evaluate["train"], evaluate["dev"]]
    ud = "eval/ud_en_ewt/en_ewt-ud"
    expected = ["corpus/enwiki_AA.txt.xz", f"{ud}-train.conllu.xz", f"{ud}-dev.conllu.xz"]
    assert named == [str(SHARED / p) for p in expected]
    if not SHARED.exists():
        pytest.skip("needs ../shared: the paths' existence")
    load_pipeline(RECIPE)  # check_inputs: every file it names is there
