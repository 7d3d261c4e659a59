"""Exact match and F1 of extractive question answering, by the official SQuAD evaluation scripts' rules
(`evaluate-v1.1.py`, `evaluate-v2.0.py`; tests/trainer/test_evaluate_squad_metric.py runs them and asserts
equal numbers). Pure Python.

An answer is normalised before it is compared: lower case, ASCII punctuation removed, the words a, an and the
removed, whitespace collapsed. Exact match: the normalised prediction equals a normalised gold answer. F1:
over the words of the two (as multisets), the best over the gold answers. The two versions differ at the
edges, and each file is scored by its own version's rules: v2.0 drops gold answers that normalise to nothing
and scores an unanswerable question (no gold answer) against the empty string alone, where an empty
prediction and an empty gold get F1 1; v1.1 (every question answerable) gives F1 0 to an empty match.

v2.0's no-answer threshold: a model gives each question a best span and a null score (the answer is "none");
`null_odds` = null score - best span score. A question is answered "" when its odds exceed the threshold,
chosen on dev by the v2.0 script's own sweep (`best_f1_thresh`): questions in ascending odds, answered one
more at a time, the F1 total after each step; the best step's odds are the threshold.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable

VERSIONS = ("1.1", "2.0")
_PUNCTUATION = str.maketrans("", "", string.punctuation)  # ASCII only, as the scripts
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize(text: str) -> str:
    """The scripts' normalisation: lower case; punctuation, then articles removed; whitespace collapsed."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact(prediction: str, gold: str) -> int:
    return int(normalize(prediction) == normalize(gold))


def f1(prediction: str, gold: str, version: str = "2.0") -> float:
    """Word F1 of two answers; an empty side scores 1 against an empty side under v2.0, 0 under v1.1."""
    predicted, wanted = normalize(prediction).split(), normalize(gold).split()
    if version == "2.0" and not (predicted and wanted):
        return int(predicted == wanted)
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0
    # the scripts' arithmetic, in their order: totals then equal theirs to the last bit
    precision, recall = 1.0 * same / len(predicted), 1.0 * same / len(wanted)
    return (2 * precision * recall) / (precision + recall)


def golds_scored(golds: Iterable[str], version: str) -> list[str]:
    """The gold answers a prediction is compared with: v2.0 leaves out those that normalise to nothing and
    scores an unanswerable question (none left) against the empty string alone."""
    golds = list(golds)
    if version == "1.1":
        return golds
    return [g for g in golds if normalize(g)] or [""]


def question_score(golds: Iterable[str], prediction: str, version: str) -> tuple[int, float]:
    """(exact match, F1) of one question: the best over its gold answers."""
    scored = golds_scored(golds, version)
    return max(exact(prediction, g) for g in scored), max(f1(prediction, g, version) for g in scored)


def percent(values: list, total: int) -> float:
    return 100.0 * sum(values) / total if total else 0.0


def score(golds: dict[str, list[str]], predictions: dict[str, str], version: str) -> dict:
    """Exact match and F1 in percent over the questions of `golds` (id -> gold answer texts, [] for an
    unanswerable one; in the file's order), each by its best gold answer; a question without a prediction
    scores 0 (v1.1's rule; the v2.0 script leaves it out of the total). v2.0 adds the breakdown by
    answerable (`has_answer`) and unanswerable (`no_answer`) questions."""
    if version not in VERSIONS:
        raise ValueError(f"SQuAD version {version!r}: one of {', '.join(VERSIONS)}")
    exacts, f1s = {}, {}
    for qid, answers in golds.items():
        exacts[qid], f1s[qid] = question_score(answers, predictions[qid], version) if qid in predictions \
            else (0, 0)
    result = _totals(list(golds), exacts, f1s)
    if version == "2.0":
        for name, answerable in (("has_answer", True), ("no_answer", False)):
            ids = [qid for qid, answers in golds.items() if bool(answers) == answerable]
            if ids:
                result[name] = _totals(ids, exacts, f1s)
    return result


def _totals(ids: list[str], exacts: dict, f1s: dict) -> dict:
    return {"exact_match": percent([exacts[q] for q in ids], len(ids)),
            "f1": percent([f1s[q] for q in ids], len(ids)), "n": len(ids)}


# ---------------------------------------------------------------- v2.0: the no-answer threshold


def _sweep(spans: dict[str, str], scores: dict[str, float], null_odds: dict[str, float],
           has_answer: dict[str, bool]) -> tuple[float, float | None]:
    """The v2.0 script's sweep: start from every question answered "" (each unanswerable one right), then
    answer the questions in ascending odds (a stable sort, in `null_odds`' order), each adding its span's
    score (answerable) or losing 1 (unanswerable, with a non-empty span). The best total in percent, and the
    odds at which it was reached (None: answering none is best)."""
    total = best = sum(1 for answerable in has_answer.values() if not answerable)
    threshold = None
    for qid in sorted(null_odds, key=null_odds.__getitem__):
        if qid not in scores:
            continue
        if has_answer[qid]:
            total += scores[qid]
        elif spans[qid]:
            total -= 1
        if total > best:
            best, threshold = total, null_odds[qid]
    return 100.0 * best / len(scores), threshold


def best_threshold(spans: dict[str, str], scores: dict[str, float], null_odds: dict[str, float],
                   has_answer: dict[str, bool]) -> tuple[float, float]:
    """The v2.0 script's (best_f1, best_f1_thresh) (or best_exact with exact scores): 0.0 when answering
    no question is best, as the script says."""
    best, threshold = _sweep(spans, scores, null_odds, has_answer)
    return best, 0.0 if threshold is None else threshold


def choose_null_threshold(golds: dict[str, list[str]], spans: dict[str, str],
                          null_odds: dict[str, float]) -> float:
    """The threshold on `null_odds` that maximises v2.0 F1 on these questions (dev), by the script's sweep
    over each question's best span; -inf where answering no question is best (the script then reports 0.0,
    which would answer the questions of negative odds)."""
    f1s = {qid: question_score(answers, spans[qid], "2.0")[1] for qid, answers in golds.items()}
    has_answer = {qid: bool(answers) for qid, answers in golds.items()}
    odds = {qid: null_odds[qid] for qid in golds}
    _, threshold = _sweep(spans, f1s, odds, has_answer)
    return -math.inf if threshold is None else threshold


def apply_null_threshold(spans: dict[str, str], null_odds: dict[str, float], threshold: float) -> dict:
    """The answers: "" where the null odds exceed the threshold, else the best span."""
    return {qid: "" if null_odds[qid] > threshold else span for qid, span in spans.items()}
