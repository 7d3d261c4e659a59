"""Every setting of every stage is checked, by the stage's own checks, before any stage runs and whatever
`--until` selects: a typo in a training key fails a data-only run, and nothing is written."""

from __future__ import annotations

import subprocess
import sys

import pytest

from corpusprep.errors import UsageError
from pipelines import stages
from pipelines.config import plan
from pipelines.load import load_pipeline
from pipelines.runner import run_pipeline
from tests.contexts import quiet
from tests.pipelines.helpers import DEMO, REPO


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("vocab.vocab_size=-1", "demo.toml: vocab: --vocab-size (vocab_size) -1: must be"),
        ("pairs.dupe_factor=0", "demo.toml: pairs: build-pairs: --dupe-factor (dupe_factor) 0: must"),
        ("shard.masked_lm_prob=2", "demo.toml: shard: --masked-lm-prob (masked_lm_prob) 2.0: must"),
        ("train.schedule.step=10", "demo.toml: train: schedule: unknown config key 'step'"),
        ("train.optim.lr='fast'", "demo.toml: train: optim.lr: expected float"),
        ("train.processes=1000000000", "demo.toml: train.processes: expected an integer from 1 to"),
    ],
)
def test_each_stages_own_checks_run_when_the_file_is_planned(setting, message):
    with pytest.raises(UsageError) as raised:
        load_pipeline(DEMO, [setting])
    assert str(raised.value).startswith(str(DEMO.parent / message)), str(raised.value)


def test_a_runs_settings_are_checked_before_its_run_dir_is_made(tmp_path):
    """run_pipeline checks a plan made without load_pipeline too, every stage whatever --until says."""
    raw = {"input": {"paths": [str(REPO / "README.md")]}, "train": {"schedule": {"step": 10}}}
    with pytest.raises(UsageError, match="train: schedule: unknown config key 'step'"):
        run_pipeline(plan(raw, tmp_path / "p.toml"), tmp_path / "run", until="shard", context=quiet())
    assert not (tmp_path / "run").exists()


def test_a_pair_or_shard_seed_out_of_range_fails_before_the_vocab_is_built(tmp_path):
    """The seed's range is the pair and shard options' own check (corpusprep/pair, corpusprep/shard):
    planning calls it, so no stage runs."""
    with pytest.raises(UsageError, match="seed"):
        load_pipeline(DEMO, ["pipeline.seed=18446744073709551616"])


def test_init_from_the_stages_own_output_is_refused_before_anything_is_written(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "train").mkdir(parents=True)  # init_from names an existing directory: checked up front
    pipeline = load_pipeline(DEMO, [f"train.checkpoint.init_from='{run_dir / 'train'}'"])
    with pytest.raises(UsageError, match=r"^train: train.checkpoint.init_from .*: this stage's own output"):
        run_pipeline(pipeline, run_dir, context=quiet())
    assert [p.name for p in run_dir.iterdir()] == ["train"]
    assert not any((run_dir / "train").iterdir())


def test_check_places_is_every_kinds_hook():
    """A kind that names no place inherits a check that passes: the runner calls it for every stage."""
    pipeline = load_pipeline(DEMO)
    dirs = {s.name: s.output for s in pipeline.stages}
    for stage in pipeline.stages:
        assert stages.STAGE_KINDS[stage.kind].check_places(stage, dirs) is None


@pytest.mark.slow
def test_a_typo_in_training_fails_a_data_only_run_with_one_line_and_writes_nothing(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "corpusprep", "run", str(DEMO), "--run-dir", str(tmp_path / "run"),
         "--until", "shard", "--set", "train.schedule.step=10"],
        capture_output=True, text=True, cwd=REPO,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"corpusprep: error: {DEMO}: train: schedule: unknown config key 'step' (known: ")
    assert not (tmp_path / "run").exists()
