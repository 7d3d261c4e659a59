"""Exact match and F1 by the official SQuAD rules: hand-computed cases, then the official scripts themselves
(`evaluate-v1.1.py`, `evaluate-v2.0.py`, run as they are in a subprocess) on random predictions and, when
they are here, on the real dev sets: our numbers equal theirs to the last bit. The scripts and data are public
copies fetched outside the repository (never committed): squad/ of bench/yardsticks.py's DATA
(its README.md says where each came from); the tests that need them skip without them."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpusprep.engine.files import write_json
from tests.conftest import public_path
from tests.trainer.test_evaluate_squad import paragraph, qa, write_squad
from trainer.evaluate.squad import read_squad
from trainer.evaluate.squad_metric import (
    apply_null_threshold,
    best_threshold,
    choose_null_threshold,
    exact,
    f1,
    normalize,
    question_score,
    score,
)


def official(name: str) -> Path:
    return public_path(f"squad/{name}")


# ---------------------------------------------------------------- hand-computed


def test_normalisation_lowercases_and_drops_punctuation_articles_and_extra_spaces():
    assert normalize("  The Quick, brown  fox! ") == "quick brown fox"
    assert normalize("an apple a day") == "apple day"
    assert normalize("Theatre's anthem") == "theatres anthem"  # articles only as whole words
    assert normalize("A-B") == "ab"  # punctuation first: "a-b" is no article
    assert normalize("naïve café—“quoted”") == "naïve café—“quoted”"  # ASCII punctuation only, as the scripts
    assert normalize("the") == normalize("!") == ""


def test_exact_match_and_f1_by_hand():
    assert exact("Denver Broncos", "the denver broncos.") == 1
    assert exact("Denver", "Denver Broncos") == 0
    # [cat, sat] against [cat, sat, on, mat]: precision 1, recall 1/2
    assert f1("the cat sat", "cat sat on mat") == pytest.approx(2 / 3)
    # [x, y, y] against [y, y, y, z]: 2 in common (a multiset), precision 2/3, recall 2/4
    assert f1("x y y", "y y y z") == pytest.approx(4 / 7)
    assert f1("dog", "cat") == 0
    # the best over the gold answers, for each score separately
    assert question_score(["Paris", "the city of Paris"], "city of Paris", "1.1") == (1, 1.0)
    em, best = question_score(["Paris, France", "in Paris"], "Paris", "1.1")
    assert em == 0 and best == pytest.approx(2 / 3)  # 1 of 2 words: precision 1, recall 1/2


def test_the_versions_differ_only_at_empty_answers():
    # v2.0: an unanswerable question is right only with the empty answer; a gold that normalises to
    # nothing is dropped (here the only one: the question counts as unanswerable)
    assert question_score([], "", "2.0") == (1, 1)
    assert question_score([], "something", "2.0") == (0, 0)
    assert question_score(["the"], "", "2.0") == (1, 1)
    assert question_score(["the", "Paris"], "", "2.0") == (0, 0)
    assert question_score(["Paris"], "", "2.0") == (0, 0)
    # v1.1: every gold counts; an empty match is an exact match but no word in common: F1 0
    assert question_score(["the"], "", "1.1") == (1, 0)
    assert question_score(["the"], "a", "1.1") == (1, 0)


def test_totals_and_the_v2_breakdown_by_hand():
    golds = {"a": ["Paris"], "b": ["the cat sat", "cat"], "c": [], "d": []}
    answers = {"a": "paris", "b": "cat sat on mat", "c": "", "d": "x"}
    result = score(golds, answers, "2.0")
    # a: right; b: EM 0, F1 the better of 2/3 (against [cat, sat]: precision 2/4, recall 1) and 2/5
    # (against [cat]: precision 1/4, recall 1); c: right; d: wrong
    assert result["exact_match"] == 50.0 and result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1) / 4)
    assert result["has_answer"] == {"exact_match": 50.0, "f1": pytest.approx(100 * (5 / 3) / 2), "n": 2}
    assert result["no_answer"] == {"exact_match": 50.0, "f1": 50.0, "n": 2}
    v1 = score({"a": ["Paris"], "b": ["the cat sat", "cat"], "e": ["dog"]}, answers, "1.1")
    assert v1 == {"exact_match": 100 / 3, "f1": pytest.approx(100 * (1 + 2 / 3) / 3), "n": 3}  # e: no answer


def test_the_null_threshold_is_the_best_point_of_the_sweep_by_hand():
    golds = {"q1": ["yes"], "q2": [], "q3": ["no"], "q4": []}
    spans = {"q1": "yes", "q2": "maybe", "q3": "wrong", "q4": "also"}
    odds = {"q1": -2.0, "q2": 1.0, "q3": 3.0, "q4": -1.0}
    # all "": 2 of 4 right; answering in ascending odds: q1 (+1) 3, q4 (-1) 2, q2 (-1) 1, q3 (+0) 1
    threshold = choose_null_threshold(golds, spans, odds)
    assert threshold == -2.0
    answers = apply_null_threshold(spans, odds, threshold)
    assert answers == {"q1": "yes", "q2": "", "q3": "", "q4": ""}
    assert score(golds, answers, "2.0")["f1"] == 75.0
    f1s = {q: question_score(golds[q], spans[q], "2.0")[1] for q in golds}
    assert best_threshold(spans, f1s, odds, {q: bool(g) for q, g in golds.items()}) == (75.0, -2.0)
    # when answering nothing is best, nothing is answered (the script reports threshold 0.0 then)
    odds = {"q1": 5.0, "q2": -1.0, "q3": 3.0, "q4": -2.0}
    spans["q1"] = "no"
    assert choose_null_threshold(golds, spans, odds) == -math.inf
    assert set(apply_null_threshold(spans, odds, -math.inf).values()) == {""}


# ---------------------------------------------------------------- the official scripts

WORDS = ["The", "the", "a", "An", "cat", "Cat", "sat", "on", "mat", "mat.", "(1868)", "Paris,", "café",
         "İstanbul", "naïve", "—", "“quoted”", "don't", "U.S.", "3.14", "x", "!", "..."]


def random_dataset(rng: np.random.Generator, n: int, v2: bool) -> tuple[list, dict, dict]:
    """SQuAD data (articles), predictions and null odds that reach the rules' corners: case, punctuation,
    articles, non-ASCII, golds that normalise to nothing, repeated words, empty predictions, tied odds."""
    paragraphs, answers, odds = [], {}, {}
    for i in range(n):
        words = [WORDS[j] for j in rng.integers(len(WORDS), size=rng.integers(3, 12))]
        context = " ".join(words)
        golds = [] if v2 and rng.random() < 0.3 else [_span(rng, words) for _ in range(rng.integers(1, 4))]
        qid = f"q{i}"
        paragraphs.append(paragraph(context, qa(qid, "?", *golds, impossible=not golds if v2 else None)))
        kind = rng.integers(4)
        answers[qid] = "" if kind == 0 else golds[0][0].upper() if kind == 1 and golds else \
            _span(rng, words)[0]
        odds[qid] = float(rng.integers(-3, 4)) if rng.random() < 0.5 else float(rng.normal())
    # the script sweeps ties in its file's order: write_json sorts the ids (as null-odds.json is written)
    return paragraphs, answers, dict(sorted(odds.items()))


def _span(rng: np.random.Generator, words: list[str]) -> tuple[str, int]:
    """1 to 4 consecutive words and where they start in " ".join(words)."""
    a = int(rng.integers(len(words)))
    b = int(rng.integers(a, min(len(words), a + 4)))
    return " ".join(words[a : b + 1]), len(" ".join(words[:a])) + (1 if a else 0)


def run_official(script: Path, data: Path, predictions: Path, *extra: str, scratch: Path) -> dict:
    out = scratch / "official.eval.json"  # v2.0 writes its scores: never beside `data` or the predictions
    done = subprocess.run([sys.executable, str(script), str(data), str(predictions), *extra]
                          + (["-o", str(out)] if "v2.0" in script.name else []),
                          capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.read_text() if "v2.0" in script.name else done.stdout)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_v1_scores_equal_the_official_script_exactly(seed, tmp_path):
    script = official("evaluate-v1.1.py")
    data, answers, _ = random_dataset(np.random.default_rng(seed), 300, v2=False)
    path = write_squad(tmp_path / "dev.json", data)
    write_json(tmp_path / "pred.json", answers)
    theirs = run_official(script, path, tmp_path / "pred.json", scratch=tmp_path)
    ours = score(read_squad(path).golds(), answers, "1.1")
    assert (ours["exact_match"], ours["f1"]) == (theirs["exact_match"], theirs["f1"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_v2_scores_and_best_thresholds_equal_the_official_script_exactly(seed, tmp_path):
    script = official("evaluate-v2.0.py")
    data, answers, odds = random_dataset(np.random.default_rng(seed), 300, v2=True)
    path = write_squad(tmp_path / "dev.json", data, "v2.0")
    write_json(tmp_path / "pred.json", answers)
    write_json(tmp_path / "odds.json", odds)
    # a threshold no odds exceed: the scores are those of the answers as given
    odds_file = str(tmp_path / "odds.json")
    theirs = run_official(script, path, tmp_path / "pred.json", "-n", odds_file, "-t", "1e300",
                          scratch=tmp_path)
    golds = read_squad(path).golds()
    ours = score(golds, answers, "2.0")
    assert (ours["exact_match"], ours["f1"], ours["n"]) == (theirs["exact"], theirs["f1"], theirs["total"])
    for part, name in (("has_answer", "HasAns"), ("no_answer", "NoAns")):
        assert (ours[part]["exact_match"], ours[part]["f1"]) == (theirs[f"{name}_exact"],
                                                                 theirs[f"{name}_f1"])
    has = {q: bool(g) for q, g in golds.items()}
    for metric, position in (("exact", 0), ("f1", 1)):
        raw = {q: question_score(g, answers[q], "2.0")[position] for q, g in golds.items()}
        assert best_threshold(answers, raw, odds, has) == (theirs[f"best_{metric}"],
                                                           theirs[f"best_{metric}_thresh"])


@pytest.mark.slow  # ~2-4 s: the official script on a whole dev set
def test_on_real_dev_v1_with_bert_predictions_equal_the_official_script(tmp_path):
    """SQuAD v1.1 dev and BERT's leaderboard predictions on it (EM 86.2, F1 92.2), and random spans."""
    script = official("evaluate-v1.1.py")
    dev = public_path("squad/dev-v1.1.json")
    bert = public_path("squad/predictions-bert-ensemble-v1.1-dev.json")
    split = read_squad(dev)
    theirs = run_official(script, dev, bert, scratch=tmp_path)
    ours = score(split.golds(), json.loads(bert.read_text()), "1.1")
    assert (ours["exact_match"], ours["f1"]) == (theirs["exact_match"], theirs["f1"])
    assert round(ours["exact_match"], 1) == 86.2 and round(ours["f1"], 1) == 92.2


@pytest.mark.slow  # ~2-4 s: the official script on a whole dev set
def test_on_real_dev_v2_with_random_answers_equal_the_official_script(tmp_path):
    """CS224N's half of SQuAD v2.0 dev, each question answered by a random span of its context or ""."""
    script = official("evaluate-v2.0.py")
    dev = public_path("squad/dev-v2.0-cs224n-half.json")
    split = read_squad(dev)
    rng = np.random.default_rng(5)
    answers = {}
    for q in split.examples:
        a = int(rng.integers(len(q.context)))
        answers[q.id] = "" if rng.random() < 0.4 else q.context[a : a + int(rng.integers(1, 30))]
    write_json(tmp_path / "pred.json", answers)
    theirs = run_official(script, dev, tmp_path / "pred.json", scratch=tmp_path)
    ours = score(split.golds(), answers, "2.0")
    assert (ours["exact_match"], ours["f1"]) == (theirs["exact"], theirs["f1"])
    assert ours["has_answer"]["n"] == theirs["HasAns_total"]
    assert ours["no_answer"]["n"] == theirs["NoAns_total"]

