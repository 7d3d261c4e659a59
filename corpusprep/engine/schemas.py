"""The engine's own records: an artifact's `artifact.json` and `.work/run.json` (engine.artifact,
engine.manifest) and a task's marker (engine.executor), registered with `corpusprep.engine.records`."""

from __future__ import annotations

from corpusprep.engine import records
from corpusprep.engine.records import (
    FILES,
    MAX_INT,
    SCALAR,
    SHA256,
    Anything,
    Bool,
    Either,
    Int,
    Lazy,
    ListOf,
    MapOf,
    Name,
    Null,
    Num,
    Obj,
    Schema,
    Str,
)

TASK_ID = Str(pattern=r"[A-Za-z0-9][A-Za-z0-9._-]*", what="a task id")
# A task's stats: counts, nested by split or reason, lists of examples; checked by shape here (the stage that
# merges them sums numbers, merges objects and joins lists), and where they steer work, by the stage's own
# schema below.
STATS_VALUE: Schema = Either(Int(-MAX_INT - 1), Num(), Bool(), Null(), Str(), Lazy(lambda: STATS_LIST),
                             Lazy(lambda: STATS))
STATS_LIST = ListOf(STATS_VALUE)
STATS = MapOf(STATS_VALUE)
TASK = Obj({"stats": STATS, "outputs": FILES})

KIND = Str(pattern=r"[a-z][a-z0-9_-]*", what="an output kind")
ARTIFACT = Obj(
    {"kind": KIND, "format_version": Int(1), "fingerprint": SHA256, "identity": MapOf(Anything()),
     "files": FILES},
    {"tasks": MapOf(TASK, key=TASK_ID), "summary": MapOf(SCALAR)},
)
ARTIFACT_RUN = Obj({"fingerprint": SHA256, "identity": MapOf(Anything())}, {"foreign": ListOf(Name())})


records.register(__name__, {
    "artifact": ARTIFACT,  # DIR/artifact.json (engine.artifact)
    "artifact_run": ARTIFACT_RUN,  # DIR/.work/run.json
    "task_marker": TASK,  # DIR/.work/markers/TASK.done.json (engine.executor)
})
