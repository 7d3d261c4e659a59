"""The records a pipeline run writes and reads back (pipelines/runner.py, pipelines/stages.py), registered
with `corpusprep.engine.records`: the run's `run.json`, each stage's started and done records, and the demo
corpus stage's stats."""

from __future__ import annotations

from corpusprep.engine import records
from corpusprep.engine.records import COUNT, Anything, MapOf, Name, Num, Obj, Opt, Str

# Pipeline runs (pipelines/runner.py).
PIPELINE_RUN = Obj({"pipeline": Str()}, {"source": Str()})
STAGE_STARTED = Obj({"fingerprint": Str()})
STAGE_DONE = Obj({
    "stage": Str(), "kind": Str(), "phase": Opt(Str()), "fingerprint": Str(), "settings": MapOf(Anything()),
    "inputs": MapOf(Str()), "output": Name(), "outputs": MapOf(COUNT, key=Name()),
    "counts": MapOf(Anything()),
    "unit": Opt(Str()), "seconds": Num(0), "engine": Str(), "finished": Str(),
})
DEMO_STATS = Obj({k: COUNT for k in ("modules", "docstrings", "documents", "bytes")}, {"dropped": Anything()})

records.register(__name__, {
    "pipeline_run": PIPELINE_RUN,  # RUN_DIR/run.json
    "stage_started": STAGE_STARTED,  # RUN_DIR/stages/NAME.started.json
    "stage_done": STAGE_DONE,  # RUN_DIR/stages/NAME.done.json
    "demo_stats": DEMO_STATS,  # RUN_DIR/corpus/demo_stats.json
})
