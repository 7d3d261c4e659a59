"""`python -m trainer.evaluate MODEL --glue DIR`: every GLUE task of a directory in GLUE's own formats, with
its official metric, and one table like BERT's Table 1 (WNLI left out), beside random init and the published
BERT rows for a model of BERT's shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.yardsticks import PUBLIC_DATA
from tests.trainer.test_evaluate_command import args, fake_runs, toy  # noqa: F401 - fixtures
from trainer.evaluate import glue, published
from trainer.evaluate.__main__ import main
from trainer.evaluate.readers import read_task
from trainer.evaluate.settings import EvalSettings

SENTENCES = ["the dog runs .", "a cat sleeps .", "we like the red house .", "they find a river .",
             "the old cat sees a dog .", "you walk ."]


def glue_dir(root: Path) -> Path:
    """A small directory in GLUE's layout and formats: CoLA without a header (source, label, mark,
    sentence), MNLI's two dev sets and gold_label, MRPC's `#1 String` header, STS-B's scores, and WNLI."""
    files = {
        "CoLA/train.tsv": [f"src{i}\t{i % 2}\t{'*' if i % 2 == 0 else ''}\t{s}"
                           for i, s in enumerate(SENTENCES)],
        "CoLA/dev.tsv": [f"src\t{i % 2}\t\t{s}" for i, s in enumerate(SENTENCES[:4])],
        "MRPC/train.tsv": ["\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        + [f"{i % 2}\t{i}\t{i + 1}\t{s}\t{SENTENCES[i - 1]}" for i, s in enumerate(SENTENCES)],
        "RTE/train.tsv": ["index\tsentence1\tsentence2\tlabel"]
        + [f"{i}\t{s}\t{s}\t{'entailment' if i % 2 else 'not_entailment'}" for i, s in enumerate(SENTENCES)],
        "STS-B/train.tsv": ["\t".join(("index", "genre", "filename", "year", "old_index", "source1",
                                        "source2", "sentence1", "sentence2", "score"))]
        + [f"{i}\tmain\tf\t2012\t{i:04}\tnone\tnone\t{s}\t{SENTENCES[-1 - i % 6]}\t{i * 0.27:.3f}"
           for i, s in enumerate(SENTENCES * 3)],
        "MNLI/train.tsv": ["index\tpromptID\tpairID\tgenre\tsentence1\tsentence2\tlabel1\tgold_label"]
        + [f"{i}\tp\tq\tfiction\t{s}\t{s}\tx\t{['entailment', 'neutral', 'contradiction'][i % 3]}"
           for i, s in enumerate(SENTENCES)],
        "WNLI/train.tsv": ["index\tsentence1\tsentence2\tlabel", "0\ta\tb\t1", "1\tc\td\t0"],
    }
    for name in ("MRPC", "RTE", "STS-B", "WNLI"):
        files[f"{name}/dev.tsv"] = files[f"{name}/train.tsv"]
    files["MNLI/dev_matched.tsv"] = files["MNLI/dev_mismatched.tsv"] = files["MNLI/train.tsv"]
    for name, lines in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.mark.slow  # ~12 s: five evaluations (stand-in runs), each exporting the toy model, twice
def test_each_task_in_glues_format_with_its_metric_and_table_1(toy, fake_runs, tmp_path, capsys):  # noqa: F811
    directory = glue_dir(tmp_path / "glue")
    argv = [str(toy["run"].parent.parent), "--glue", str(directory), "--vocab", str(toy["vocab"]),
            "--workers", "1", "--seeds", "3", "-o", str(tmp_path / "out")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("| GLUE dev | MNLI-m | MNLI-mm | CoLA | STS-B | MRPC | RTE | Average |\n")
    # the fake runs score 0.9 + seed/1000 (pre-trained) and 0.8 + seed/1000: medians 90.1 and 80.1
    assert "| pre-trained | 90.1 | 90.1 | 90.1 | 90.1 | 90.1 | 90.1 | 90.1 |" in out
    assert "| gain | +10.0 | +10.0 | +10.0 | +10.0 | +10.0 | +10.0 | +10.0 |" in out
    assert "The gain is the median of each seed's difference" in out
    assert "WNLI is left out" in out and "Not in the directory: QQP, QNLI, SST-2." in out
    assert len(fake_runs) == 5 * 3 * 2  # WNLI never runs
    assert "BERT-base" not in out  # the toy model is not BERT's shape
    for name, metric, kind in (("CoLA", "matthews", "classify"), ("STS-B", "spearman", "regression"),
                               ("MRPC", "f1", "classify"), ("MNLI", "accuracy", "classify")):
        result = (tmp_path / "out" / name / "evaluation.json").read_text()
        assert f'"metric": "{metric}"' in result and f'"kind": "{kind}"' in result
    fake_runs.clear()
    assert main(argv) == 0 and fake_runs == []  # done: the table again, nothing run
    assert capsys.readouterr().out == out


def test_glues_own_columns_are_read(tmp_path):
    directory = glue_dir(tmp_path / "glue")
    base = EvalSettings()
    cola = read_task(glue.settings_for(glue.BY_NAME["cola"], directory, base))
    assert cola.train.examples[0].text == "the dog runs ." and cola.labels == ("0", "1")
    mrpc = read_task(glue.settings_for(glue.BY_NAME["mrpc"], directory, base))
    assert mrpc.pair and mrpc.train.fields == "'#1 String' + '#2 String' -> 'Quality'"
    mnli = glue.settings_for(glue.BY_NAME["mnli"], directory, base)
    assert Path(mnli.test).name == "dev_mismatched.tsv" and read_task(mnli).labels == (
        "contradiction", "entailment", "neutral")
    assert read_task(glue.settings_for(glue.BY_NAME["sts-b"], directory, base)).kind == "regression"
    two_columns = "our friends won't buy this .\t1\nthey drank the pub .\t0\n"  # ../shared's copy
    (directory / "CoLA" / "train.tsv").write_text(two_columns)
    assert read_task(glue.settings_for(glue.BY_NAME["cola"], directory, base)).train.examples[1].label == "0"


def test_wnli_and_unknown_tasks_are_one_line(toy, tmp_path, capsys):  # noqa: F811
    directory = glue_dir(tmp_path / "glue")
    for tasks, says in (("WNLI", "--glue-tasks wnli: one of MNLI, QQP"), ("RTE,XNLI", "--glue-tasks xnli")):
        assert main([str(toy["run"]), "--glue", str(directory), "--glue-tasks", tasks]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err
    assert main([str(toy["run"]), "--glue", str(directory), "--train", "x.tsv"]) == 2
    assert "leave out --train" in capsys.readouterr().err
    assert main([str(toy["run"]), "--glue", str(tmp_path / "empty")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_the_published_rows_are_table_1s_over_the_same_columns():
    assert published.figures("mrpc", 12, 768) == [{"name": f"BERT-base (published, not measured: "
                                                   f"{published.SOURCE}, Table 1, GLUE test server)",
                                                   "metric": "f1", "value": 0.889}]
    assert published.figures("mrpc", 2, 128) == [] and published.figures("squad2.0", 12, 768) == []
    base = [0.846, 0.834, 0.712, 0.905, 0.935, 0.521, 0.858, 0.889, 0.664]  # Table 1: average 79.6
    assert round(100 * sum(base) / len(base), 1) == 79.6
    split = {"pretrained": {"median": 0.5}, "random": {"median": 0.4}, "gain": {"median": 0.1},
             "baseline": 0.3, "verdict": "v"}

    def evaluation(benchmark: str, metric: str) -> dict:
        rows = published.figures(benchmark, 12, 768)
        return {"seeds": [1], "splits": {"dev": split | {"published": rows}}}

    results = {"RTE": evaluation("rte", "accuracy"), "CoLA": evaluation("cola", "matthews")}
    table = glue.table({"tasks": results, "missing": []})
    average = 100 * (0.521 + 0.664) / 2
    assert f"| BERT-base (published, not measured: {published.SOURCE}, GLUE test server) | 52.1 | 66.4 | " \
        f"{average:.1f} |" in table
    assert "| pre-trained | 50.0 | 50.0 | 50.0 |" in table and "BERT-large" not in table


GLUE = PUBLIC_DATA / "glue"


@pytest.mark.slow  # ~1.5 s: SST-2's 67,349 rows
@pytest.mark.skipif(not (GLUE / "MRPC" / "train.tsv").is_file(), reason=f"GLUE is not in {PUBLIC_DATA}")
def test_real_glue_files_read_as_distributed():
    """The public copies bench/yardsticks.py names: the row counts of GLUE's release (Wang et al. 2019)."""
    counts = {"MRPC": (3_668, 408), "RTE": (2_490, 277), "STS-B": (5_749, 1_500), "SST-2": (67_349, 872)}
    for name, (train, dev) in counts.items():
        settings = glue.settings_for(glue.BY_NAME[name.lower()], GLUE, EvalSettings())
        if settings is None:
            continue
        data = read_task(settings)
        assert (len(data.train.examples), len(data.dev.examples)) == (train, dev), name
        assert not data.train.skips.counts and not data.dev.skips.counts
