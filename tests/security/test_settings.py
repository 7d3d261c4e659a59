"""Every setting is checked before the first stage writes anything: every phase's train settings (the
runner's own keys and the trainer's checker), phase names, choices in any case by one rule, and sizes that
would only fail inside tokenizers or torch (a vocab the trainer cannot allocate, a model no machine holds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from corpusprep.errors import UsageError
from corpusprep.tokenize.options import MAX_VOCAB_SIZE, VocabOptions
from pipelines.config import plan
from pipelines.load import load_pipeline
from tests.contexts import quiet
from tests.reliability.helpers import REPO, corpusprep, environment, error_line

PIPELINES = REPO / "pipelines"
PHASES = {"pipeline": {"name": "p"}, "phases": {"seq128": {}, "seq512": {"train": {"eval": {"every": 5}}}}}


def with_phase_train(train: dict) -> dict:
    return {**PHASES, "phases": {**PHASES["phases"], "seq512": {"train": train}}}


@pytest.mark.parametrize("train, says", [
    ({"processes": "two"}, r"phases.seq512.train.processes: expected an integer from 1 to \d+ .*, got 'two'"),
    ({"processes": 0}, r"train.processes: expected an integer from 1 to \d+ .*, got 0"),
    ({"processes": 10**9}, r"train.processes: expected an integer from 1 to \d+ .*, got 1000000000"),
    ({"init_from_previous": "no"}, r"train.init_from_previous: expected true or false, got 'no'"),
    ({"optim": {"lr": "fast"}}, r"^train-seq512: optim.lr: expected float, got 'fast'"),
    ({"schedule": {"steps": 0}}, r"^train-seq512: schedule.steps=0 must be an integer from 1 to 1,000,000"),
    ({"model": {"hidden_size": 1_000_000}}, r"^train-seq512: model.hidden_size=1,000,000 .* more than this"),
    ({"nosuch": 1}, r"^train-seq512: unknown config key 'nosuch'"),
])
def test_a_bad_train_setting_of_any_phase_fails_before_any_stage(train, says):
    """The runner's own keys when the file is planned, the trainer's (its checker) in the checks the runner
    makes of every stage before the first runs."""
    from pipelines import stages

    with pytest.raises(UsageError, match=says):
        for stage in plan(with_phase_train(train), Path("p.toml")).stages:
            stages.check(stage)


def test_a_bad_setting_fails_before_the_run_dir_exists_even_after_until(tmp_path):
    """As the user met it: `--set train.processes='"two"'` used to fail after vocab, pairs and shards."""
    result = corpusprep("run", PIPELINES / "demo.toml", "--run-dir", tmp_path / "run", "--set",
                        'train.processes="two"')
    assert result.returncode == 2, result.stderr
    assert error_line(result).endswith("(the cores this machine gives this process), got 'two'")
    assert not (tmp_path / "run").exists()
    from pipelines.runner import run_pipeline

    with pytest.raises(UsageError, match="masked"):  # a stage after --until: planning checks it
        run_pipeline(load_pipeline(PIPELINES / "demo.toml", ["shard.masked_lm_prob=2"]), tmp_path / "run",
                     until="vocab", context=quiet())
    assert not (tmp_path / "run").exists()


BAD_PHASE_NAMES = ["../../x", "a/b", "..", ".hidden", "a\\b", "new\nline", "stages", "vocab", ""]


@pytest.mark.parametrize("name", BAD_PHASE_NAMES)
def test_a_phase_name_is_a_plain_name_never_a_path(name):
    """A phase names directories of the run dir (NAME/pairs, ...): no path, none of the run dir's own."""
    with pytest.raises(UsageError, match="phase"):
        plan({"phases": {name: {}, "ok": {}}}, Path("p.toml"))
    assert [s.output for s in plan(PHASES, Path("p.toml")).stages][-1] == "seq512/plot"


def test_choices_take_any_case_in_a_pipeline_as_on_the_command_line():
    pipeline = plan({"input": {"paths": ["c.txt"], "format": "PARQUET", "on_error": "Skip"},
                     "pairs": {"line_breaks": "AUTO"}}, Path("p.toml"))
    vocab = pipeline.stage("vocab").settings["read"]
    assert (vocab["format"], vocab["on_error"]) == ("parquet", "skip")
    read = plan({"input": {"paths": ["c.txt"], "document_per_file": True, "max_document_mb": 2}},
                Path("p.toml")).stage("pairs").settings["read"]
    assert (read["document_per_file"], read["max_document_mb"]) == (True, 2.0)
    from pipelines import stages

    stages.check(pipeline.stage("pairs"))  # AUTO, as --line-breaks AUTO
    with pytest.raises(UsageError, match=r"p.toml: input: unknown input format 'PARQUETX' \(choose from"):
        plan({"input": {"paths": ["c.txt"], "format": "PARQUETX"}}, Path("p.toml"))


@pytest.mark.parametrize("inputs, says", [
    ({"max_document_mb": 0}, r"p.toml: input: max_document_mb=0.0: must be a number of MB from 0.001 to 1e"),
    ({"max_document_mb": float("inf")}, r"input: max_document_mb=inf: must be a number of MB from 0.001 to"),
    ({"max_document_mb": "16"}, r"p.toml: input.max_document_mb: expected a number, got '16'"),
    ({"document_per_file": True, "format": "jsonl"}, r"input: document_per_file: for plain text only"),
    ({"document_per_file": "yes"}, r"input.document_per_file: expected true or false"),
])
def test_the_read_settings_of_a_pipeline_are_checked_as_the_flags_are(inputs, says):
    with pytest.raises(UsageError, match=says):
        plan({"input": {"paths": ["c.txt"], **inputs}}, Path("p.toml"))


@pytest.mark.slow  # ~1.0 s idle
def test_a_vocab_size_the_tokenizers_trainer_cannot_hold_is_refused_before_anything_is_written(tmp_path):
    """`--vocab-size 100000000000` aborted inside the Rust trainer (exit 134, a backtrace, .work left)."""
    (tmp_path / "c.txt").write_text("Some text.\n")
    for flag, value in (("--vocab-size", "100000000000"), ("--reserved", str(MAX_VOCAB_SIZE + 1)),
                        ("--limit-alphabet", "10000000000000000000000")):
        result = corpusprep("vocab", tmp_path / "c.txt", "-o", tmp_path / "v", flag, value)
        assert result.returncode == 2, result.stderr
        says = f"vocab: {flag} ({flag[2:].replace('-', '_')}) {int(value):,}: must be an integer from"
        assert error_line(result).startswith(says), result.stderr
        assert "16,777," in error_line(result), result.stderr
        assert not (tmp_path / "v").exists()
    assert VocabOptions(vocab_size=MAX_VOCAB_SIZE).vocab_size == MAX_VOCAB_SIZE


def test_passes_over_the_data_are_bounded():
    """`--dupe-factor 1000000000` listed a billion tasks (memory, then a hang); `--dupe-masks` alike."""
    from corpusprep.pair.build import PairOptions
    from corpusprep.shard.options import ShardOptions

    with pytest.raises(UsageError, match=r"--dupe-factor \(dupe_factor\) 1,000,000,000: must be .* to 1,000"):
        PairOptions(dupe_factor=10**9)
    with pytest.raises(UsageError, match=r"--dupe-masks \(dupe_masks\) 1,000,000,000: must be .* to 1,000"):
        ShardOptions(dupe_masks=10**9)
    with pytest.raises(UsageError, match=r"\(dupe_factor\) 1,000,000,000: must be"):  # a pipeline too
        from pipelines import stages

        stages.check(plan({"pairs": {"dupe_factor": 10**9}}, Path("p.toml")).stage("pairs"))


@pytest.mark.slow  # ~2.9 s idle
def test_a_model_no_machine_holds_is_one_line_before_torch_allocates():
    """hidden_size 10^6: ~10^13 parameters; refused from the config, before shards are even looked at."""
    result = subprocess.run([sys.executable, "-m", "trainer.run", "--shards", "nowhere", "--set",
                             "model.hidden_size=1000000"], cwd=REPO, env=environment(), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "model.hidden_size=1,000,000 with 2 layers has ~" in lines[0], result.stderr
    assert "GiB of float32 weights: more than this machine's" in lines[0]


DEEP = "[" * 100_000 + "]" * 100_000  # past Python's recursion limit: RecursionError in any parser


@pytest.mark.parametrize("text", [f"x = {DEEP}", "x = " + "[" * 70 + "]" * 70, "x = " + "1" * 5000])
def test_a_hostile_toml_file_is_one_line(text, tmp_path):
    """A pipeline file or a trainer config nested past the records' depth rule, or holding an integer of
    thousands of digits: one line naming the file (both readers are corpusprep.settings.read_toml)."""
    from trainer.config import load_config

    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=rf"^{path}: (nested too deeply|invalid TOML)"):
        load_pipeline(path)
    with pytest.raises(UsageError, match=rf"^{path}: (nested too deeply|invalid TOML)"):
        load_config(path)


@pytest.mark.parametrize("value", [DEEP, "1" * 5000])
def test_a_hostile_set_value_is_text_and_refused_by_its_type(value):
    """`--set` values too deep or too long to be literals are the text itself, then refused by the type of
    the setting: one line, not a RecursionError (pipelines: a TOML value; the trainer: a JSON one)."""
    from pipelines import stages
    from trainer.config import load_config

    with pytest.raises(UsageError, match=r"dupe_factor: expected an integer"):
        pipeline = load_pipeline(PIPELINES / "demo.toml", [f"pairs.dupe_factor={value}"], check_inputs=False)
        stages.check(pipeline.stage("pairs"))
    with pytest.raises(UsageError, match=r"--set seed: expected int"):
        load_config(None, [f"seed={value}"])
