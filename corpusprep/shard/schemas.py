"""The records `corpusprep shard` writes and reads back, registered with `corpusprep.engine.records`: a
shards directory's `manifest.json`, and the stats of its two kinds of task where a task's marker is reused
(a pairs file masked and dealt to spill files, a shard written)."""

from __future__ import annotations

import json

from corpusprep.engine import records
from corpusprep.engine.records import (
    COUNT,
    MAX_INT,
    NUMBER,
    SHA256,
    Bool,
    Int,
    Lazy,
    ListOf,
    MapOf,
    Name,
    Num,
    Obj,
    Opt,
    Rule,
    Schema,
    Str,
)
from corpusprep.mask import strategies
from corpusprep.pair.schemas import OBJECTIVE, PAIRS_STATS, SEQ_LENGTH
from corpusprep.tokenize import SPECIAL_TOKENS

MASK_STRATEGY = Str(strategies.REGISTRY)  # the registry itself: a strategy registered later is known too
MASK_TASK = Obj({"examples": COUNT, "groups": ListOf(ListOf(ListOf(Int(-MAX_INT - 1))))}, rest=NUMBER)
SHARD_TASK = Obj({"path": Name(), "rows": COUNT}, rest=NUMBER)


def _special_ids() -> Schema:
    return Obj({t: Int(0, 2**32) for t in SPECIAL_TOKENS})


def _special_ids_fit(vocab: dict) -> tuple[str, str] | None:
    for token, i in vocab["special_ids"].items():
        if i >= vocab["size"]:
            return f"special_ids[{json.dumps(token)}]", f"{i}, beyond the vocab's {vocab['size']} tokens"
    return None


def _one_strategy(options: dict) -> tuple[str, str] | None:
    """`whole_word_mask` (older manifests' name of the whole-word strategy) agrees with `mask_strategy`."""
    strategy = options.get("mask_strategy")
    if options.get("whole_word_mask") and strategy not in (None, strategies.WHOLE_WORD_ALIAS):
        return "whole_word_mask", f"true (the whole-word strategy) contradicts mask_strategy {strategy!r}"
    return None


SHARD = Obj({"path": Name(), "rows": COUNT, "bytes": COUNT, "sha256": SHA256})
SHARDS_MANIFEST = Obj(
    {
        "schema_version": Int(1),
        "max_seq_length": SEQ_LENGTH,
        "token_dtype": Str(("uint16", "uint32")),
        "options": Rule(Obj({"masked_lm_prob": Num(0, 1), "max_predictions_per_seq": Int(0, 2**16)},
                            {"mask_strategy": MASK_STRATEGY, "whole_word_mask": Bool(),
                             "dupe_masks": Int(1)}),
                        _one_strategy),
        "vocab": Rule(Obj({"path": Str(), "sha256": SHA256, "size": Int(1, 2**32),
                           "special_ids": Lazy(_special_ids)}),
                      _special_ids_fit),
        "splits": MapOf(Obj({"shards": ListOf(SHARD)}, {"examples": COUNT})),
        "totals": MapOf(Int(-MAX_INT - 1)),
    },
    {"objective": Opt(OBJECTIVE), "word_segmenter": Opt(Str()), "pairs_stats": PAIRS_STATS,
     "fingerprint": Str(), "seed": Int(-MAX_INT - 1)},
)

records.register(__name__, {
    "shards_manifest": SHARDS_MANIFEST,  # SHARDS_DIR/manifest.json
    # the stats in a task's marker, by the stage that reuses them (Executor.run, `stats_kind`)
    "mask_task": MASK_TASK,  # a pairs file masked and dealt to spill files
    "shard_task": SHARD_TASK,  # a shard written
})
