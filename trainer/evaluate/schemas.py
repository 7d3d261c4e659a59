"""The records `python -m trainer.evaluate` writes and reads back, registered with
`corpusprep.engine.records`: one fine-tuning run's, and the whole evaluation's. Read back on a resume and by
`corpusprep validate`, so every field a later step indexes is checked here first."""

from __future__ import annotations

from corpusprep.engine import records
from corpusprep.engine.records import (
    COUNT,
    FILES,
    MAX_INT,
    Anything,
    Bool,
    Int,
    ListOf,
    MapOf,
    Num,
    Obj,
    Opt,
    Rule,
    Str,
)

SEED = Int(-MAX_INT - 1)
SCORE = Num(-1, 1)  # every metric: accuracy, F1, P/R in [0, 1]; Matthews and correlations in [-1, 1]
ENTITY_TYPE = Obj({"precision": SCORE, "recall": SCORE, "f1": SCORE, "n": COUNT})
QUESTIONS = Obj({"exact_match": SCORE, "f1": SCORE, "n": COUNT})  # SQuAD v2.0: answerable, unanswerable
SCORES = Obj({"n": COUNT}, {"truncated": COUNT, "per_type": MapOf(ENTITY_TYPE), "has_answer": QUESTIONS,
                            "no_answer": QUESTIONS}, rest=SCORE)  # and every metric
EVALUATE_RUN = Obj({
    "init": Str(("pretrained", "random")), "seed": SEED, "threads": Int(1), "seconds": Num(0),
    "scores": MapOf(SCORES),
}, {
    "epoch": Num(0), "curve": ListOf(ListOf(Num(), 2, 2)), "diverged": Opt(Str()), "collapsed": MapOf(Str()),
    "config": Obj({"lr": Num(0), "batch_size": Int(1), "epochs": Num(0)}), "state": MapOf(Anything()),
    "encoded": MapOf(MapOf(COUNT)),  # per split: examples, features (windows), truncated...
    "reused": Str(),  # the random_runs entry it was copied from
})
RANDOM_RUN = Obj({"record": EVALUATE_RUN, "made_of": Anything(), "files": FILES})
SEED_SCORES = Obj({"scores": ListOf(Num()), "mean": Num(), "std": Opt(Num(0))},
                  {"interval": ListOf(Num(), 2, 2), "median": Num(), "min": Num(), "max": Num()})
MEDIANS = Obj({"pretrained": Num(), "random": Num(), "baseline": Num()})  # a metric's, over the seeds
PUBLISHED = Obj({"name": Str(), "metric": Str(), "value": Num()})
EVALUATION = Rule(
    Obj(
        {
            "model": Obj({"source": Str(), "description": Str(),
                          "cost": Obj({"known": Bool()}, {"steps": COUNT, "examples": Opt(COUNT),
                                                          "tokens": Opt(COUNT), "seconds": Opt(Num(0)),
                                                          "note": Str()})}),
            "task": Str(), "metric": Str(), "unit": Str(), "device": Str(), "baseline_name": Str(),
            "seeds": ListOf(SEED, min_len=1),
            "settings": Obj({"epochs": Num(0), "batch_size": Int(1), "lr": Num(0), "warmup": Num(0, 1),
                             "weight_decay": Num(0), "max_length": Int(1)}),
            "splits": MapOf(Obj({"pretrained": SEED_SCORES, "random": SEED_SCORES, "gain": SEED_SCORES,
                                 "verdict": Str(), "outcome": Str(("helps", "hurts", "no_gain", "unknown")),
                                 "baseline": SCORE, "n": COUNT, "warnings": ListOf(Str())},
                                {"metrics": MapOf(MEDIANS), "published": ListOf(PUBLISHED)})),
            "runs": ListOf(EVALUATE_RUN), "seconds": Num(0), "wall_seconds": Num(0), "runs_at_once": Int(1),
            "load_average": Num(0), "cpus": Int(1),
        },
        {"skipped": MapOf(Obj({"counts": MapOf(COUNT), "examples": ListOf(Str(), min_len=1)})),
         "invalid_utf8": MapOf(COUNT), "notes": ListOf(Str()), "grid": ListOf(Anything()),
         "curves": ListOf(Str())},
    ),
    lambda r: None if "dev" in r["splits"] else ("splits", "no dev split"),
)

records.register(__name__, {
    "evaluation": EVALUATION,  # EVAL_DIR/evaluation.json (trainer.evaluate)
    "evaluate_run": EVALUATE_RUN,  # one fine-tuning run (a task's stats, and EVAL_DIR/runs/*.json)
    "random_run": RANDOM_RUN,  # a random init's run in a store of them (random_runs.py)
})
