"""A pipeline's [evaluate] section: a stage after the last training phase, planned, checked, skipped and
rerun by the runner's rules, and its table in report.md."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from corpusprep.errors import UsageError
from pipelines import stages
from pipelines.load import load_pipeline
from pipelines.runner import run_pipeline
from pipelines.stages import EvaluateStage
from tests.contexts import quiet
from tests.pipelines.helpers import DEMO, small_overrides, write_small_corpus
from tests.trainer.evaluate_helpers import write_toy_rows, write_toy_task

PIPELINE = """
[pipeline]
name = "toy"
seed = 3

[input]
paths = ["corpus.txt"]

[train]
schedule.steps = 5

[phases.short.pairs]
max_seq_length = 128

[phases.long.pairs]
max_seq_length = 512

[evaluate]
train = "task/train.conllu"
dev = "task/dev.conllu"
epochs = 1
"""


@pytest.fixture
def toml(tmp_path) -> Path:
    (tmp_path / "corpus.txt").write_text("Some text.\n")
    write_toy_task(tmp_path / "task", train=8, dev=4)
    path = tmp_path / "toy.toml"
    path.write_text(PIPELINE)
    return path


def test_evaluate_is_planned_after_the_last_phase_with_the_pipeline_seed_and_paths_from_the_file(toml):
    pipeline = load_pipeline(toml)
    last = pipeline.stages[-1]
    assert (last.name, last.kind, last.output) == ("evaluate", "evaluate", "evaluate")
    assert last.needs == {"train": "train-long"}
    task = toml.parent / "task"
    assert last.settings["evaluate"] == {"seed": 3, "train": str(task / "train.conllu"),
                                         "dev": str(task / "dev.conllu"), "epochs": 1}
    settings = EvaluateStage.settings(last)[""]  # the one task of a table without tasks
    assert settings.epochs == 1.0 and settings.seeds is None  # the rest: by the model size, when it runs
    assert "evaluate" not in [s.kind for s in load_pipeline(DEMO).stages]  # no table, no stage


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("evaluate.seeds=0", "evaluate.seeds=0: must be > 0"),
        ("evaluate.epochs=inf", "evaluate.epochs=inf: must be > 0 and at most 1,000"),  # was an OverflowError
        ("evaluate.epoch=2", "evaluate.epoch: unknown setting"),
        ("evaluate.lr='fast'", r"evaluate.lr: expected a number \(or leave it out\), got 'fast'"),
        ("evaluate.dev='nope.conllu'", "evaluate.dev: "),
    ],
)
def test_a_bad_evaluate_setting_fails_before_anything_runs(toml, tmp_path, override, message):
    with pytest.raises(UsageError, match=message):
        run_pipeline(load_pipeline(toml, [override]), tmp_path / "run", context=quiet())
    assert not (tmp_path / "run").exists()


@pytest.fixture
def stand_ins(request, monkeypatch) -> Counter:
    """The runner tests' stand-in stages (tests/pipelines/test_runner.py), but the evaluate stage keeps its
    real settings check and task files: what the runner fingerprints."""
    counter = request.getfixturevalue("calls")
    real = EvaluateStage()
    monkeypatch.setattr(stages.STAGE_KINDS["evaluate"], "check", real.check)
    monkeypatch.setattr(stages.STAGE_KINDS["evaluate"], "input_files", real.input_files)
    return counter


def test_a_rerun_does_nothing_and_an_edited_task_file_reruns_only_the_evaluation(toml, tmp_path, stand_ins):
    ran = stand_ins
    run_dir = tmp_path / "run"
    first = run_pipeline(load_pipeline(toml), run_dir, context=quiet())
    assert ran["evaluate"] == 1 and first["stages"][-1]["status"] == "ran"
    assert str(toml.parent / "task/dev.conllu") in first["stages"][-1]["inputs"]  # the report names it
    ran.clear()
    second = run_pipeline(load_pipeline(toml), run_dir, context=quiet())
    assert not ran and {s["status"] for s in second["stages"]} == {"skipped"}
    dev = toml.parent / "task/dev.conllu"
    dev.write_text(dev.read_text() + "\n")  # another size: other data
    third = run_pipeline(load_pipeline(toml), run_dir, context=quiet())
    assert dict(ran) == {"evaluate": 1}
    assert [s["name"] for s in third["stages"] if s["status"] == "ran"] == ["evaluate"]
    ran.clear()
    run_pipeline(load_pipeline(toml, ["evaluate.lr=1e-4"]), run_dir, context=quiet())
    assert dict(ran) == {"evaluate": 1}
    ran.clear()
    until = run_pipeline(load_pipeline(toml), run_dir, until="train", context=quiet())
    assert "evaluate" not in [s["name"] for s in until["stages"]] and not ran


@pytest.mark.slow
def test_the_real_stage_evaluates_the_trained_model_and_reports_it(tmp_path):
    pytest.importorskip("transformers")
    corpus = write_small_corpus(tmp_path / "corpus.jsonl", 0.15)
    train, dev = write_toy_task(tmp_path / "task", train=24, dev=8)
    overrides = [*small_overrides(corpus), f"evaluate.train='{train}'", f"evaluate.dev='{dev}'",
                 "evaluate.seeds=2", "evaluate.epochs=1", "evaluate.max_length=32", "evaluate.device='cpu'"]
    run_dir = tmp_path / "run"
    first = run_pipeline(load_pipeline(DEMO, overrides), run_dir, context=quiet())
    evaluate = first["stages"][-1]
    assert (evaluate["name"], evaluate["status"]) == ("evaluate", "ran")
    result = json.loads((run_dir / "evaluate" / "evaluation.json").read_text())
    assert result["seeds"] == [12345, 12346] and result["model"]["cost"]["steps"] == 6
    assert len(result["splits"]["dev"]["pretrained"]["scores"]) == 2
    assert evaluate["counts"]["gain"] == pytest.approx(result["splits"]["dev"]["gain"]["mean"])
    report = (run_dir / "report.md").read_text()
    assert "## Evaluation: is the model better than nothing? (evaluate)" in report
    assert "| pre-trained |" in report and "| random init |" in report and "dev: " in report
    second = run_pipeline(load_pipeline(DEMO, overrides), run_dir, context=quiet())
    assert {s["status"] for s in second["stages"]} == {"skipped"}
    assert "| pre-trained |" in (run_dir / "report.md").read_text()  # a skipped stage keeps its table


def test_the_templates_commented_example_is_valid(tmp_path):
    """pipelines/template.toml's [evaluate] example, uncommented: every key a real setting."""
    text = (DEMO.parent / "template.toml").read_text()
    example = text[text.index("# [evaluate]"):]
    table = "\n".join(line.removeprefix("# ") for line in example.splitlines() if line.startswith("# "))
    (tmp_path / "ud").mkdir()
    for name in ("train", "dev", "test"):
        (tmp_path / "ud" / f"en_ewt-ud-{name}.conllu.xz").write_bytes(b"")
    path = tmp_path / "p.toml"
    path.write_text(DEMO.read_text() + "\n" + table + "\n")
    stage = load_pipeline(path).stages[-1]
    settings = EvaluateStage.settings(stage)[""]
    assert (stage.kind, settings.seeds, settings.label_column) == ("evaluate", 3, "upos")
    assert settings.test == str(tmp_path / "ud" / "en_ewt-ud-test.conllu.xz")


SEVERAL = PIPELINE.replace('''[evaluate]
train = "task/train.conllu"
dev = "task/dev.conllu"
epochs = 1
''', '''[evaluate]
epochs = 1

[evaluate.tasks.upos]
train = "task/train.conllu"
dev = "task/dev.conllu"

[evaluate.tasks.pairs]
train = "rows/train.tsv"
dev = "rows/dev.tsv"
lr = 3e-3
''')


def test_several_tasks_are_planned_with_shared_settings_and_their_own_paths(tmp_path):
    (tmp_path / "corpus.txt").write_text("Some text.\n")
    write_toy_task(tmp_path / "task", train=8, dev=4)
    write_toy_rows(tmp_path / "rows", train=8, dev=4)
    path = tmp_path / "several.toml"
    path.write_text(SEVERAL)
    settings = EvaluateStage.settings(load_pipeline(path).stages[-1])
    assert list(settings) == ["upos", "pairs"]
    assert settings["upos"].train == str(tmp_path / "task" / "train.conllu") and settings["upos"].lr is None
    assert (settings["pairs"].epochs, settings["pairs"].lr, settings["pairs"].seed) == (1.0, 3e-3, 3)
    files = EvaluateStage().input_files(load_pipeline(path).stages[-1])
    assert files[2] == str(tmp_path / "rows" / "train.tsv")
    path.write_text(SEVERAL.replace("rows/dev.tsv", "rows/nope.tsv"))
    with pytest.raises(UsageError, match=r"evaluate\.tasks\.pairs\.dev: .*nope\.tsv: no such file"):
        run_pipeline(load_pipeline(path), tmp_path / "run", context=quiet())
    path.write_text(SEVERAL.replace("lr = 3e-3", "lr = 'fast'"))
    with pytest.raises(UsageError, match=r"evaluate\.tasks\.pairs\.lr: expected a number"):
        run_pipeline(load_pipeline(path), tmp_path / "run", context=quiet())
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # ~40 s: a small pipeline, then four real fine-tuning runs
def test_several_tasks_make_one_table_across_them_and_a_plot_each(tmp_path):
    pytest.importorskip("transformers")
    corpus = write_small_corpus(tmp_path / "corpus.jsonl", 0.15)
    upos = write_toy_task(tmp_path / "task", train=24, dev=8)
    rows = write_toy_rows(tmp_path / "rows", train=24, dev=8)
    overrides = [*small_overrides(corpus), "evaluate.seeds=1", "evaluate.epochs=2", "evaluate.max_length=32",
                 "evaluate.device='cpu'", f"evaluate.tasks.upos.train='{upos[0]}'",
                 f"evaluate.tasks.upos.dev='{upos[1]}'", f"evaluate.tasks.pairs.train='{rows[0]}'",
                 f"evaluate.tasks.pairs.dev='{rows[1]}'"]
    run_dir = tmp_path / "run"
    first = run_pipeline(load_pipeline(DEMO, overrides), run_dir, context=quiet())
    evaluate = first["stages"][-1]
    assert evaluate["status"] == "ran" and evaluate["counts"]["tasks"] == 2
    for name, kind in (("upos", "tag"), ("pairs", "classify")):
        result = json.loads((run_dir / "evaluate" / name / "evaluation.json").read_text())
        assert result["kind"] == kind and (run_dir / "evaluate" / name / "dev-curves.png").is_file()
    report = (run_dir / "report.md").read_text()
    assert "| task | metric | pre-trained | random init | gain | baseline | verdict |" in report
    assert "| upos dev | accuracy |" in report and "| pairs dev | accuracy |" in report
    assert "(evaluate/upos/dev-curves.png)" in report and "(evaluate/pairs/dev-curves.png)" in report
    second = run_pipeline(load_pipeline(DEMO, overrides), run_dir, context=quiet())
    assert {s["status"] for s in second["stages"]} == {"skipped"}
