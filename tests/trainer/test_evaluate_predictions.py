"""Every run's predictions on every scored file, written as `predictions/{init}-seed{N}-{split}.jsonl`, and
every score evaluation.json reports recomputed from them by the field's own scorer (seqeval, scikit-learn,
scipy), independently of trainer.evaluate's code: real fine-tuning of each task kind on toy data."""

from __future__ import annotations

import json

import pytest
from scipy.stats import pearsonr, spearmanr
from seqeval.metrics import f1_score, precision_score, recall_score
from sklearn.metrics import accuracy_score, matthews_corrcoef
from sklearn.metrics import f1_score as binary_f1

from tests.interop.helpers import one_thread
from tests.trainer.evaluate_helpers import (
    fast_settings,
    write_run,
    write_toy_ner,
    write_toy_rows,
    write_toy_task,
    write_toy_vocab,
)
from trainer.evaluate import compare, curves

pytest.importorskip("transformers")

TASKS = {"tag": write_toy_task, "ner": write_toy_ner, "classify": write_toy_rows,
         "regression": lambda d: write_toy_rows(d, regression=True)}


def recompute(kind: str, lines: list[dict]) -> dict[str, float]:
    gold, predicted = [line["gold"] for line in lines], [line["predicted"] for line in lines]
    if kind == "tag":
        pairs = [(g, p) for gs, ps in zip(gold, predicted, strict=True)
                 for g, p in zip(gs, ps, strict=True) if g]
        return {"accuracy": accuracy_score([g for g, _ in pairs], [p for _, p in pairs]), "n": len(pairs)}
    if kind == "ner":
        flat_gold, flat_predicted = sum(gold, []), sum(predicted, [])
        return {"entity_f1": f1_score(gold, predicted), "entity_precision": precision_score(gold, predicted),
                "entity_recall": recall_score(gold, predicted),
                "accuracy": accuracy_score(flat_gold, flat_predicted)}
    if kind == "classify":
        return {"accuracy": accuracy_score(gold, predicted), "matthews": matthews_corrcoef(gold, predicted),
                "f1": binary_f1(gold, predicted, pos_label="1", zero_division=0), "n": len(gold)}
    return {"pearson": pearsonr(gold, predicted)[0], "spearman": spearmanr(gold, predicted)[0]}


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("toy")
    vocab = write_toy_vocab(root / "vocab")
    return {"root": root, "vocab": vocab, "run": write_run(root / "run", vocab)}


@pytest.mark.slow  # ~5 s a kind: two real fine-tuning runs
@pytest.mark.parametrize("kind", TASKS)
def test_every_score_is_recomputed_from_the_written_predictions(kind, toy, tmp_path):
    train, dev = TASKS[kind](tmp_path / "task")
    settings = fast_settings(train, dev, toy["vocab"], seeds=1, epochs=6.0, test=str(dev), lr=3e-3)
    out = tmp_path / "evaluation"
    result = compare.evaluate(toy["run"], settings, out, workers=1)
    assert result["kind"] == kind and len(result["runs"]) == 2
    written = json.loads((out / "evaluation.json").read_text())
    for run in written["runs"]:
        for split in ("dev", "test"):
            path = out / "predictions" / f"{run['init']}-seed{run['seed']}-{split}.jsonl"
            lines = [json.loads(line) for line in path.read_text().splitlines()]
            shape = {"id", "gold", "predicted"} | ({"words"} if kind in ("tag", "ner") else set())
            assert all(set(line) == shape for line in lines)
            for metric, value in recompute(kind, lines).items():
                assert run["scores"][split][metric] == value, (kind, split, metric)
    for run in written["runs"]:  # the epoch chosen on dev; test (the dev file here) scored with its weights
        assert run["scores"]["dev"][written["metric"]] == max(v for _, v in run["curve"])
        assert run["epoch"] == next(e for e, v in run["curve"] if v == max(v for _, v in run["curve"]))
        assert run["scores"]["test"] == run["scores"]["dev"]
    assert written["curves"] == ["dev-curves.png"]
    assert (out / "dev-curves.png").read_bytes().startswith(b"\x89PNG")
    assert curves.title(written).endswith(": 1 seed")  # its title counts the seeds in words a user reads
    assert curves.title(written | {"seeds": [1, 2]}).endswith(": 2 seeds")
    dev = written["splits"]["dev"]
    assert dev["pretrained"]["scores"] == [r["scores"]["dev"][written["metric"]] for r in written["runs"]
                                           if r["init"] == "pretrained"]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield
