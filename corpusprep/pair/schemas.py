"""The records `corpusprep build-pairs` writes and reads back, registered with `corpusprep.engine.records`:
a pairs directory's `stats.json`, and the stats of its three kinds of task where a task's marker is reused
(reading documents into chunks, a chunk split and tokenized, a partition's dupe pass)."""

from __future__ import annotations

from corpusprep.engine import records
from corpusprep.engine.records import BY_REASON, COUNT, MAX_INT, NUMBER, SHA256, Int, ListOf, MapOf, Obj, Str
from corpusprep.engine.schemas import STATS_VALUE
from corpusprep.objectives import REGISTRY as OBJECTIVES

OBJECTIVE = Str(OBJECTIVES)  # the registry itself: an objective registered later is known too
SEQ_LENGTH = Int(1, 2**16)  # token positions are uint16 in the shards

# a split's counts: numbers, but for skips by reason and the files' NotNext - IsNext balances
SPLIT_COUNTS = Obj({}, {"skipped": BY_REASON, "documents_skipped": BY_REASON,
                        "file_imbalance": ListOf(Int(-MAX_INT - 1))}, rest=NUMBER)
READ_STATS = Obj({"skipped": BY_REASON, "skipped_files": BY_REASON}, {"examples": MapOf(ListOf(Str()))},
                 rest=STATS_VALUE)  # corpusprep.read.ReadStats.to_dict()
READ_TASK = Obj({"chunks": Int(0, 2**31), "documents": MapOf(COUNT), "read": READ_STATS}, {"chars": COUNT})
TOKENS_TASK = Obj({"partition_documents": MapOf(COUNT)}, rest=SPLIT_COUNTS)
PAIRS_TASK = MapOf(SPLIT_COUNTS)

PAIRS_SPLIT = Obj({"pairs": COUNT}, {"rows": COUNT, "documents": COUNT})
PAIRS_STATS = Obj(
    {},
    {
        "pairs": COUNT,
        "splits": MapOf(PAIRS_SPLIT),
        "objective": OBJECTIVE,
        "options": Obj({}, {"objective": OBJECTIVE, "max_seq_length": SEQ_LENGTH, "language": Str(),
                            "dupe_factor": Int(1)}),
        "vocab": Obj({}, {"sha256": SHA256, "size": Int(1)}),
        "max_seq_length": SEQ_LENGTH,
    },
)

records.register(__name__, {
    "pairs_stats": PAIRS_STATS,  # PAIRS_DIR/stats.json
    # the stats in a task's marker, by the stage that reuses them (Executor.run, `stats_kind`)
    "read_task": READ_TASK,  # reading the documents into chunks
    "tokens_task": TOKENS_TASK,  # a chunk split and tokenized
    "pairs_task": PAIRS_TASK,  # a partition's dupe pass
})
