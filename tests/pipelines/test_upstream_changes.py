"""No stage is skipped after its input changed: a stage's fingerprint holds the content of the outputs it
reads, not the settings that made them. For each stage of the demo pipeline, its output is made to change
while its settings stay the same (as a budgeted training run buys other steps, or a WordPiece vocab trained
again orders its ties otherwise): every stage after it must run again and be built from the new output."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from pipelines import stages
from tests.pipelines.conftest import run_demo

# stage -> (a setting that changes its output, where in the stage's settings)
CHANGES = {
    "corpus": (("max_mb",), 0.08),
    "vocab": (("vocab", "vocab_size"), 1500),
    "pairs": (("pairs", "seed"), 7),
    "shard": (("shard", "seed"), 7),
    "train": (("train", "seed"), 7),
}
ORDER = ["corpus", "vocab", "pairs", "shard", "train", "plot"]


def identity(run_dir: Path, stage: str) -> dict:
    out = {"shard": "shards"}.get(stage, stage)
    return json.loads((run_dir / out / "artifact.json").read_text())["identity"]


@pytest.mark.slow
@pytest.mark.parametrize("changed", list(CHANGES))
def test_every_stage_after_a_changed_output_reruns_and_reads_the_new_output(demo_run, monkeypatch, changed):
    run_dir, baseline = demo_run
    kind = stages.STAGE_KINDS[changed]
    real_run = kind.run
    path, value = CHANGES[changed]

    def run_otherwise(stage, ctx):  # the same recorded settings, another output
        settings = copy.deepcopy(stage.settings)
        table = settings
        for key in path[:-1]:
            table = table[key]
        table[path[-1]] = value
        return real_run(dataclasses.replace(stage, settings=settings), ctx)

    monkeypatch.setattr(kind, "run", run_otherwise)
    before = {s: identity(run_dir, s) for s in ORDER}
    curves = (run_dir / "plot" / "curves.png").read_bytes()
    out = {"shard": "shards"}.get(changed, changed)
    for path_ in sorted((run_dir / out).rglob("*"), reverse=True):  # its output lost: the stage reruns
        path_.unlink() if path_.is_file() else path_.rmdir()

    report = run_demo(run_dir)

    status = {s["name"]: s["status"] for s in report["stages"]}
    after = ORDER[ORDER.index(changed):]
    assert status == {s: "ran" if s in after else "skipped" for s in ORDER}
    for stage in after:  # each built from what the stage before it wrote this time
        assert identity(run_dir, stage) != before[stage], stage
    assert (run_dir / "plot" / "curves.png").read_bytes() != curves  # the curves of the new training
    done = {s: json.loads((run_dir / "stages" / f"{s}.done.json").read_text()) for s in ORDER}
    for stage in after[1:]:  # and fingerprinted by it: the digest of the output as it is now
        upstream = ORDER[ORDER.index(stage) - 1]
        assert done[stage]["inputs"][upstream] == done[upstream]["digest"], stage
    assert [s["counts"] for s in baseline["stages"][: ORDER.index(changed)]] == [
        s["counts"] for s in report["stages"][: ORDER.index(changed)]
    ]
