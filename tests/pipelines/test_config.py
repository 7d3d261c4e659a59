"""Pipeline files -> stage plans: overrides, phases, fingerprints, and clear errors for bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpusprep.errors import UsageError
from pipelines.config import apply_override, fingerprint, parse_value, plan
from pipelines.load import load_pipeline

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def test_set_values_are_toml_values_or_plain_text():
    assert parse_value("1e-4") == 1e-4
    assert parse_value("true") is True
    assert parse_value("[1, 2]") == [1, 2]
    assert parse_value("data/corpus.txt") == "data/corpus.txt"
    config: dict = {}
    apply_override(config, "train.schedule.steps=50")
    apply_override(config, "input.paths=corpus/")
    assert config == {"train": {"schedule": {"steps": 50}}, "input": {"paths": ["corpus/"]}}
    for bad in ("steps=5", "train.=5", "train.steps", "nosuch.key=1"):
        with pytest.raises(UsageError, match="--set"):
            apply_override({}, bad)


def test_single_phase_plan_and_seed_propagation():
    pipeline = plan({"pipeline": {"name": "x", "seed": 9}, "pairs": {"dupe_factor": 2}}, Path("x.toml"))
    assert [(s.name, s.output) for s in pipeline.stages] == [
        ("corpus", "corpus"),
        ("vocab", "vocab"),
        ("pairs", "pairs"),
        ("shard", "shards"),
        ("train", "train"),
        ("plot", "plot"),
    ]
    assert pipeline.stage("pairs").settings["pairs"] == {"seed": 9, "dupe_factor": 2}
    assert pipeline.stage("pairs").needs == {"corpus": "corpus", "vocab": "vocab"}


def test_phases_override_shared_tables_and_chain_weights():
    raw = {
        "input": {"paths": ["wiki/"]},
        "pairs": {"max_seq_length": 128, "dupe_factor": 5},
        "train": {"schedule": {"steps": 10, "warmup_steps": 1}},
        "phases": {
            "a": {},
            "b": {"pairs": {"max_seq_length": 512}},
            "c": {"train": {"init_from_previous": False}},
        },
    }
    pipeline = plan(raw, Path("w.toml"))
    assert pipeline.stage("pairs-b").settings["pairs"] == {
        "seed": 12345,
        "max_seq_length": 512,
        "dupe_factor": 5,
    }
    assert pipeline.stage("pairs-a").needs == {"corpus": "input", "vocab": "vocab"}
    raw["phases"]["b"]["train"] = {"schedule": {"steps": 20}}
    assert plan(raw, Path("w.toml")).stage("train-b").settings["train"]["schedule"] == {
        "steps": 20,
        "warmup_steps": 1,
    }
    assert pipeline.stage("train-b").needs == {"shards": "shard-b", "vocab": "vocab", "init": "train-a"}
    assert pipeline.stage("train-c").needs == {"shards": "shard-c", "vocab": "vocab"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"trainer": {}}, r"unknown section \[trainer\]"),
        ({"input": {"path": ["x"]}}, "unknown key input.path"),
        ({"input": {"paths": ["@demo", "x"]}}, "cannot be mixed"),
        ({"phases": {"a": {"model": {}}}}, "phases.a: a phase holds only"),
        ({"pipeline": {"seed": "one"}}, "pipeline.seed must be an integer"),
    ],
)
def test_bad_pipeline_files_name_the_problem(raw, message):
    with pytest.raises(UsageError, match=message):
        plan(raw, Path("bad.toml"))


def test_fingerprint_follows_settings_and_inputs_only():
    base = fingerprint("pairs", {"a": 1, "b": [1, 2]}, {"vocab": "f00"}, "0.1")
    assert base == fingerprint("pairs", {"b": [1, 2], "a": 1}, {"vocab": "f00"}, "0.1")
    assert base != fingerprint("pairs", {"a": 2, "b": [1, 2]}, {"vocab": "f00"}, "0.1")
    assert base != fingerprint("pairs", {"a": 1, "b": [1, 2]}, {"vocab": "f01"}, "0.1")


@pytest.mark.parametrize("name", ["demo", "wikipedia", "template", "roberta", "sop"])
def test_shipped_pipelines_plan_and_every_setting_is_known(name):
    from pipelines.stages import check

    pipeline = load_pipeline(PIPELINES / f"{name}.toml", check_inputs=False)  # their corpora are not here
    assert pipeline.name == name
    kinds = [s.kind for s in pipeline.stages]
    assert kinds[-4:] == ["pairs", "shard", "train", "plot"]
    assert pipeline.demo_input == (name == "demo")
    for stage in pipeline.stages:
        check(stage)  # raises UsageError on an unknown or invalid setting


def test_a_pipeline_name_is_a_plain_name_never_a_path():
    """The default run directory is runs/NAME: a name with a `/` or `..` would put it outside runs/."""
    for bad in ("../escape", "a/b", "..", ".", "/tmp/x", "a\\b", ".hidden"):
        with pytest.raises(UsageError, match="plain name"):
            plan({"pipeline": {"name": bad}}, Path("x.toml"))
    assert plan({"pipeline": {"name": "my-run_2.1"}}, Path("x.toml")).name == "my-run_2.1"
    assert plan({}, Path("dir/wiki-en.toml")).name == "wiki-en"


def test_a_pipeline_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "p.toml"
    path.write_bytes(b"name = 'x' # \xff\xfe\n")
    with pytest.raises(UsageError, match=r"p.toml: not UTF-8 text \(byte 13\)"):
        load_pipeline(path)
