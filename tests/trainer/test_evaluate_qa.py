"""The `qa` task kind: SQuAD files through `python -m trainer.evaluate` like every other kind. `auto` tells
SQuAD's JSON from JSON lines; a task mixing it with another format, or two SQuAD versions, is one usage line;
bad questions are one line naming the file and the question id (exit 1) or a counted skip; the window
settings are checked up front; a real fine-tuning learns a synthetic SQuAD v2.0 task far above the empty
answer, with the epoch and the no-answer threshold chosen on dev and test scored once with both, and every
reported score is recomputed from the written predictions by the official rules (and, when its copy is here,
by the official script itself); a pipeline's `[evaluate.tasks.squad]` is one more task of its table."""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.yardsticks import PUBLIC_DATA
from corpusprep.errors import UsageError
from tests.interop.helpers import one_thread
from tests.trainer.evaluate_helpers import stand_in_run, write_toy_task
from tests.trainer.test_evaluate_squad import (
    CONTEXT,
    FILLER,
    QUESTION,
    paragraph,
    qa,
    synthetic,
    tiny_qa_model,
    write_squad,
)
from trainer.evaluate import finetune
from trainer.evaluate.__main__ import main
from trainer.evaluate.readers import format_of, read_task
from trainer.evaluate.settings import EvalSettings
from trainer.evaluate.squad_metric import score

REPO = Path(__file__).resolve().parents[2]
SQUAD_DIR = PUBLIC_DATA / "squad"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    return tiny_qa_model(tmp_path_factory.mktemp("qa-model"))


MARKS = ["cafe", "run", "cafes", "running"]  # words of the tiny tokenizer's vocab that no filler is


def marked(n: int, seed: int, impossible_share: float = 1 / 3) -> dict:
    """A SQuAD v2.0-like file a tiny model learns in two epochs: the answer starts at the one word of MARKS in
    its context, and half of the answers take the next word too (which a model cannot tell: partial F1); the
    unanswerable contexts have no such word."""
    rng = np.random.default_rng(seed)
    data = []
    for i in range(n):
        words = [FILLER[j] for j in rng.integers(len(FILLER), size=rng.integers(15, 40))]
        entry = {"id": f"m{seed}-{i}", "question": QUESTION, "answers": [], "is_impossible": True}
        if rng.random() >= impossible_share:
            at, answer = int(rng.integers(len(words))), str(MARKS[rng.integers(len(MARKS))])
            answer += f" {words[at]}" if rng.random() < 0.5 else ""
            start = len(" ".join(words[:at])) + bool(at)
            words = [*words[:at], answer, *words[at + (" " in answer) :]]
            entry |= {"answers": [{"text": answer, "answer_start": start}], "is_impossible": False}
        data.append({"title": str(i), "paragraphs": [{"context": " ".join(words), "qas": [entry]}]})
    return {"version": "v2.0", "data": data}


def write_synthetic(path: Path, n: int, seed: int, impossible_share: float = 1 / 3) -> Path:
    path.write_text(json.dumps(synthetic(n, seed, impossible_share)), encoding="utf-8")
    return path


def write_marked(path: Path, n: int, seed: int) -> Path:
    path.write_text(json.dumps(marked(n, seed)), encoding="utf-8")
    return path


def questions(path: Path) -> list[dict]:
    return [q for a in json.loads(path.read_text())["data"] for p in a["paragraphs"] for q in p["qas"]]


def failure(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return code, err


# ---------------------------------------------------------------- files and settings


def test_auto_tells_squad_json_from_json_lines(tmp_path):
    data = [paragraph(CONTEXT, qa("a", "Where?", ("France", 76)))]
    one_line = write_squad(tmp_path / "train.json", data)
    pretty = tmp_path / "pretty.json"  # the version first, indented: still SQuAD
    pretty.write_text("\ufeff" + json.dumps({"version": "1.1", "data": data}, indent=2), encoding="utf-8")
    packed = tmp_path / "train.json.gz"
    packed.write_bytes(gzip.compress(one_line.read_bytes()))
    rows = tmp_path / "rows.json"  # JSON lines that name "paragraphs": not one document
    rows.write_text('{"sentence": "a", "label": "1", "paragraphs": 2}\n{"sentence": "b", "label": "0"}\n')
    other = tmp_path / "other.json"  # one object, but no list of articles holding paragraphs
    other.write_text(json.dumps({"data": [1, 2], "note": "paragraphs"}))
    found = {p.name: format_of(p, "auto") for p in (one_line, pretty, packed, rows, other)}
    assert found == {"train.json": "squad", "pretty.json": "squad", "train.json.gz": "squad",
                     "rows.json": "jsonl", "other.json": "jsonl"}
    task = read_task(EvalSettings(train=str(packed), dev=str(pretty)))
    assert task.kind == "qa" and task.describe() == ("extractive question answering (SQuAD v1.1: question + "
                                                     "context -> answer span): train 1 questions, dev 1 "
                                                     "questions")


def test_mixed_files_and_window_settings_are_one_usage_line(model, tmp_path, capsys):
    train = write_synthetic(tmp_path / "train.json", 4, 1, impossible_share=0)
    v2 = write_synthetic(tmp_path / "v2.json", 4, 2)
    rows = tmp_path / "dev.jsonl"
    rows.write_text('{"sentence": "a", "label": "1"}\n')
    conllu, _ = write_toy_task(tmp_path / "upos", train=4, dev=2)
    cases = [
        (["--train", str(train), "--dev", str(rows)], f"{rows}: a jsonl file, but the training file is a"),
        (["--train", str(conllu), "--dev", str(conllu), "--task", "qa"], f"--task qa: {conllu} is a conllu"),
        (["--train", str(train), "--dev", str(v2)], f"{v2}: SQuAD v2.0, but the training file is v1.1"),
        (["--train", str(train), "--dev", str(train), "--max-length", "32", "--doc-stride", "13"],
         "doc_stride=13: the pieces consecutive windows share, 0 to 12 at max_length 32"),
        (["--train", str(train), "--dev", str(train), "--max-answer-length", "0"], "max_answer_length=0"),
        (["--train", str(conllu), "--dev", str(conllu), "--doc-stride", "8"],
         "doc_stride, max_answer_length: for task qa; these files are a tag task"),
        (["--train", str(conllu), "--dev", str(conllu), "--task", "tag", "--doc-stride", "8"],
         "doc_stride, max_answer_length: for task qa, not tag"),
    ]
    for argv, said in cases:
        code, err = failure([str(model), *argv, "--device", "cpu"], capsys)
        assert code == 2 and said in err, (argv, err)


def test_the_doc_stride_follows_the_length_the_model_takes():
    base = EvalSettings(train="a", dev="b")
    qa_settings, notes = base.resolve("tiny", 64, "f1", "qa")
    # 64 positions: a 32-piece question leaves 29 for the context; run_qa's 128 cannot fit, half of it does
    assert (qa_settings.max_length, qa_settings.doc_stride, qa_settings.max_answer_length) == (64, 14, 30)
    assert notes == ["max_length 128 capped at 64: the model has 64 positions"]
    assert base.resolve("base", 512, "f1", "qa")[0].doc_stride == 30  # at 128: (128 - 3 - 64) // 2
    assert base.resolve("tiny", 64, "accuracy", "tag")[0].doc_stride is None
    with pytest.raises(UsageError, match="doc_stride=40: the pieces consecutive windows share, 0 to 28"):
        EvalSettings(train="a", dev="b", doc_stride=40).resolve("tiny", 64, "f1", "qa")  # fits 128, not 64


def test_a_bad_question_is_one_line_naming_file_and_id_or_a_counted_skip(model, tmp_path, capsys):
    train = write_synthetic(tmp_path / "train.json", 6, 1)
    document = synthetic(5, 2, impossible_share=1 / 3)
    bad = next(q for a in document["data"] for p in a["paragraphs"] for q in p["qas"] if q["answers"])
    bad["answers"][0]["answer_start"] += 1  # the text is no longer the context's at its offset
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps(document))
    code, err = failure([str(model), "--train", str(train), "--dev", str(dev)], capsys)
    assert code == 1 and err.startswith(f"error: {dev}: question {bad['id']!r}: answer ")
    assert "does not match the context at answer_start" in err and "--on-error skip" in err
    task = read_task(EvalSettings(train=str(train), dev=str(dev), on_error="skip"))
    assert dict(task.dev.skips.counts) == {"bad_answer": 1} and len(task.dev.examples) == 4
    assert bad["id"] not in {q.id for q in task.dev.examples}


def test_the_published_squad_rows_are_devlin_et_al_s_for_bert_shapes():
    from trainer.evaluate.published import figures

    def shown(benchmark: str, layers: int, hidden: int) -> dict[str, float]:
        return {row["metric"]: row["value"] for row in figures(benchmark, layers, hidden)}

    assert shown("squad1.1", 12, 768) == {"exact_match": 0.808, "f1": 0.885}  # Table 2, dev, single
    assert shown("squad1.1", 24, 1024) == {"exact_match": 0.841, "f1": 0.909}
    assert shown("squad2.0", 24, 1024) == {"exact_match": 0.787, "f1": 0.819}  # Table 3, dev
    assert shown("squad2.0", 12, 768) == {} and shown("squad1.1", 2, 128) == {}  # not reported; not BERT's


# ---------------------------------------------------------------- fine-tuned end to end


def official_v2(dev: Path, predictions: Path, odds: Path) -> dict | None:
    """The official v2.0 script on our predictions.json (and null odds, as --na-prob-file: not
    probabilities, so --na-prob-thresh inf leaves the answers as they are), when its copy is here. It
    fails on a question without a prediction: it reads a copy of `dev` without the questions we skipped."""
    script = SQUAD_DIR / "evaluate-v2.0.py"
    if not script.is_file():
        return None
    answered, document = json.loads(predictions.read_text()), json.loads(dev.read_text())
    for article in document["data"]:
        for block in article["paragraphs"]:
            block["qas"] = [q for q in block["qas"] if q["id"] in answered]
    scored = predictions.with_name("scored-dev.json")
    scored.write_text(json.dumps(document))
    command = [sys.executable, str(script), str(scored), str(predictions), "--na-prob-file", str(odds),
               "--na-prob-thresh", "inf"]
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


@pytest.mark.slow  # ~35 s on a loaded 2-core machine: two runs at once of a 2-layer, 64-wide model
def test_the_command_fine_tunes_chooses_on_dev_and_every_score_is_recomputed(model, tmp_path):
    files = {name: write_marked(tmp_path / f"{name}.json", n, seed)
             for name, (n, seed) in {"train": (150, 1), "dev": (60, 2), "test": (60, 3)}.items()}
    document = json.loads(files["dev"].read_text())  # one bad question, skipped and counted
    document["data"][0]["paragraphs"][0]["qas"][0]["answers"] = [{"text": "nowhere", "answer_start": 0}]
    files["dev"].write_text(json.dumps(document))
    out = tmp_path / "evaluation"
    command = [sys.executable, "-m", "trainer.evaluate", str(model), "--task", "qa", "--seeds", "1",
               "--epochs", "2", "--lr", "3e-3", "--batch-size", "16", "--max-length", "32", "--device", "cpu",
               "--on-error", "skip", "--workers", "2", "-o", str(out),
               *(f for name, path in files.items() for f in (f"--{name}", str(path)))]
    env = os.environ | {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "| dev f1 (questions) |" in done.stdout and "| empty answer |" in done.stdout
    assert "skipped in dev (--on-error skip): 1 bad_answer" in done.stdout
    assert "encoded: train 150 examples in " in done.stdout  # contexts longer than a window of 32
    result = json.loads((out / "evaluation.json").read_text())
    assert result["skipped"]["dev"]["counts"] == {"bad_answer": 1} and result["metric"] == "f1"
    dev, test = result["splits"]["dev"], result["splits"]["test"]
    assert dev["n"] == 59 and 0.2 <= dev["baseline"] <= 0.5  # the empty answer: the unanswerable share
    for init in ("pretrained", "random"):  # learnt: far above the empty answer, and the answers found
        assert dev[init]["median"] >= dev["baseline"] + 0.3
        assert test[init]["median"] >= test["baseline"] + 0.25
    goldfiles = {name: {q["id"]: [a["text"] for a in q["answers"]] for q in questions(path)}
                 for name, path in files.items()}
    for run in result["runs"]:
        stem = out / "predictions" / f"{run['init']}-seed{run['seed']}"
        threshold = run["state"]["null_threshold"]  # chosen on dev with the chosen epoch's weights
        threshold = -math.inf if threshold is None else threshold  # None: answering none was best
        assert run["scores"]["dev"]["f1"] == max(v for _, v in run["curve"])  # the best dev epoch
        for split in ("dev", "test"):
            rows = [json.loads(line) for line in Path(f"{stem}-{split}.jsonl").read_text().splitlines()]
            assert all(set(r) == {"id", "gold", "predicted", "null_odds"} for r in rows)
            answers = json.loads(Path(f"{stem}-{split}.predictions.json").read_text())
            odds = json.loads(Path(f"{stem}-{split}.null-odds.json").read_text())
            assert answers == {r["id"]: r["predicted"] for r in rows} and list(odds) == list(answers)
            # test answered with dev's threshold, unchanged: no answer exactly where the odds exceed it
            assert all((r["predicted"] == "") == (r["null_odds"] > threshold) for r in rows)
            golds = {r["id"]: goldfiles[split][r["id"]] for r in rows}
            recomputed = score(golds, answers, "2.0")  # the official rules, in percent
            reported = run["scores"][split]
            assert (reported["f1"], reported["exact_match"]) == (recomputed["f1"] / 100,
                                                                 recomputed["exact_match"] / 100)
            assert reported["has_answer"]["n"] + reported["no_answer"]["n"] == reported["n"] == len(rows)
            script = official_v2(files[split], Path(f"{stem}-{split}.predictions.json"),
                                 Path(f"{stem}-{split}.null-odds.json"))
            if script is not None:
                assert (script["f1"], script["exact"]) == (recomputed["f1"], recomputed["exact_match"])
                if split == "dev":  # the script's own best threshold finds our dev figure again
                    assert script["best_f1"] == pytest.approx(recomputed["f1"])


@pytest.mark.slow  # ~5 s: three short runs
def test_a_seed_gives_the_same_run_and_another_seed_another(model, tmp_path):
    train, dev = (write_marked(tmp_path / f"{name}.json", n, seed) for name, n, seed in
                  (("train", 40, 4), ("dev", 20, 5)))
    settings = EvalSettings(train=str(train), dev=str(dev), epochs=1.0, batch_size=16, lr=2e-3, max_length=32,
                            device="cpu")
    data = read_task(settings)
    with one_thread():
        runs = [finetune.run(model, data, settings, "random", seed) for seed in (7, 7, 8)]
    assert runs[0]["predictions"] == runs[1]["predictions"] and runs[0]["state"] == runs[1]["state"]
    assert runs[0]["predictions"] != runs[2]["predictions"]
    counts = runs[0]["encoded"]["train"]
    assert counts == {"examples": 40, "features": counts["features"], "truncated": 0, "unreachable": 0}
    assert counts["features"] > 40  # contexts longer than a window


# ---------------------------------------------------------------- in a pipeline

SQUAD_TABLE = """[evaluate.tasks.squad]
train = "squad/train.json"
dev = "squad/dev.json"
doc_stride = 8
"""


def test_a_squad_table_in_a_pipeline_is_one_more_task(model, tmp_path, monkeypatch):
    from pipelines.load import load_pipeline
    from pipelines.stages import EvaluateStage
    from tests.pipelines.test_evaluate_stage import SEVERAL  # upos and pairs tasks: pairs becomes squad
    from trainer.evaluate import multitask

    pipeline = SEVERAL[: SEVERAL.index("[evaluate.tasks.pairs]")] + SQUAD_TABLE

    (tmp_path / "corpus.txt").write_text("Some text.\n")
    write_toy_task(tmp_path / "task", train=8, dev=4)
    (tmp_path / "squad").mkdir()
    for name, n, seed in (("train", 12, 1), ("dev", 6, 2)):
        write_synthetic(tmp_path / "squad" / f"{name}.json", n, seed)
    path = tmp_path / "toy.toml"
    path.write_text(pipeline)
    stage = load_pipeline(path, ["evaluate.seeds=2"]).stages[-1]
    settings = EvaluateStage.settings(stage)
    assert list(settings) == ["upos", "squad"] and settings["squad"].doc_stride == 8
    assert settings["squad"].train == str(tmp_path / "squad" / "train.json")
    assert str(tmp_path / "squad" / "dev.json") in EvaluateStage().input_files(stage)
    path.write_text(pipeline.replace("doc_stride = 8", "doc_stride = -1"))
    with pytest.raises(UsageError, match=r"evaluate\.tasks\.squad\.doc_stride=-1: the pieces"):
        EvaluateStage.settings(load_pipeline(path).stages[-1])
    monkeypatch.setattr(finetune, "run", lambda hf, data, s, init, seed: stand_in_run(
        data, s, 0.6 if init == "pretrained" else 0.5))
    squad_only = {"squad": settings["squad"]}
    results = multitask.evaluate_tasks(model, squad_only, tmp_path / "out", workers=1)
    assert results["squad"]["kind"] == "qa" and results["squad"]["baseline_name"] == "empty answer"
    asked = questions(tmp_path / "squad" / "dev.json")
    unanswerable = sum(q["is_impossible"] for q in asked) / len(asked)
    assert results["squad"]["splits"]["dev"]["baseline"] == pytest.approx(unanswerable)  # the empty answer
    row = multitask.table(results)[2]  # the table across tasks in report.md
    assert row == f"| squad dev | f1 | 0.6000 | 0.5000 | +0.1000 ± 0.0000 | {unanswerable:.4f} | helps |"
    written = tmp_path / "out" / "squad" / "predictions" / "pretrained-seed3-dev.predictions.json"
    assert json.loads(written.read_text()) == {q["id"]: "" for q in asked}  # the stand-in's: the baseline
