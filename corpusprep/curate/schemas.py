"""The schemas (engine.records' language) of curate's records: the summary (`curate.json`), a line of
`removed.jsonl`, and the read task's stats, which steer the later phases. Registered with
`corpusprep.engine.records`, which imports this module when a record of one of these kinds is checked."""

from __future__ import annotations

from corpusprep.engine import records
from corpusprep.engine.records import COUNT, MAX_INT, Int, ListOf, MapOf, Num, Obj, Str

DOC_ID = Str(pattern=r"[^\x00-\x1f\x7f]{1,4096}", what="a document id (1 to 4096 printable characters)")
BY_REASON = MapOf(COUNT)
CURATE_STATS = Obj(
    {"documents": COUNT, "kept": COUNT, "removed": BY_REASON, "read": Obj({}, {"skipped": BY_REASON})},
    {"languages": BY_REASON, "characters": MapOf(COUNT),
     "evaluation": Obj({}, {"examples": COUNT, "found": COUNT, "too_short": COUNT,
                            "skipped": Obj({"counts": BY_REASON})})},
)
CURATE_REMOVED = Obj({"id": DOC_ID, "reason": Str(pattern=r"[a-z][a-z0-9-]*", what="a reason")},
                     {"kept": DOC_ID, "eval_file": Str(), "eval_position": Str(), "detail": Str(),
                      "paragraphs": ListOf(Int(0, MAX_INT)), "language": Str(),
                      "language_score": Num(0, 1)})
CURATE_READ_TASK = Obj({"chunks": Int(0, 2**31), "documents": COUNT, "starts": ListOf(COUNT),
                        "read": Obj({}, {"skipped": BY_REASON})}, {"chars": COUNT})

records.register(__name__, {
    "curate_stats": CURATE_STATS,  # OUT/curate.json
    "curate_removed": CURATE_REMOVED,  # a line of OUT/removed.jsonl
    "curate_read_task": CURATE_READ_TASK,  # the stats in a read task's marker
})
