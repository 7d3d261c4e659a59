"""The pipeline tests' fixtures: stand-in stages on a toy pipeline file (`calls`, `toml`), for the runner's
bookkeeping in milliseconds; and one small real run of pipelines/demo.toml (the embedded corpus cut small,
a few training steps), made once per session, which a test that changes it copies (`demo_run`)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pipelines import stages
from pipelines.stage_kind import StageKind, StageResult
from tests.contexts import quiet
from tests.pipelines.helpers import DEMO, SMALL

PIPELINE = """
[pipeline]
name = "toy"
seed = 3

[input]
paths = ["{corpus}"]

[vocab]
size = 10

[pairs]
dupe = 2

[shard]
rows = 4

[train]
steps = 5

[phases.short.pairs]
length = 128

[phases.long.pairs]
length = 512
"""


class FakeStage(StageKind):
    """A stand-in for every kind: writes a digest of its settings and inputs (NAME.txt), counts its calls;
    `continues`: the step `--extend` continues it from (None: it cannot be continued)."""

    def __init__(self, counter: Counter, continues: int | None = None):
        self.counter, self.continues = counter, continues

    def check(self, stage) -> None:  # the toy settings are no real options
        pass

    def run(self, stage, ctx) -> StageResult:
        self.counter[stage.name] += 1
        ctx.out.mkdir(parents=True, exist_ok=True)
        upstream = [
            (ctx.dirs[n] / f"{n}.txt").read_text() if n in ctx.dirs else Path(ctx.inputs[0]).read_text()
            for n in stage.needs.values()
        ]
        digest = hashlib.sha256(json.dumps([stage.settings, upstream], sort_keys=True).encode()).hexdigest()
        (ctx.out / f"{stage.name}.txt").write_text(digest)
        counts = {"items": 10, "continued_from": ctx.continue_from is not None}
        return StageResult(counts, unit="items", files=(f"{stage.name}.txt",))

    def validate(self, stage, ctx) -> list[str]:
        return []

    def extension_problem(self, stage, previous) -> str | None:
        return None if self.continues is not None else super().extension_problem(stage, previous)

    def continuation(self, stage, dirs, previous) -> int:
        return self.continues if self.continues is not None else super().continuation(stage, dirs, previous)


@pytest.fixture
def calls(monkeypatch) -> Counter:
    """Replace every stage by a FakeStage, and count the calls."""
    counter: Counter = Counter()
    for kind in stages.STAGE_KINDS:
        monkeypatch.setitem(stages.STAGE_KINDS, kind, FakeStage(counter))
    return counter


@pytest.fixture
def toml(tmp_path) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Some text.\n")
    path = tmp_path / "toy.toml"
    path.write_text(PIPELINE.format(corpus=corpus))
    return path

# the demo pipeline as shipped, its corpus and training cut to seconds: corpus -> vocab -> pairs -> shard
# -> train -> plot; the warm-up its default (10% of the steps)
DEMO_RUN = ["input.demo_mb=0.1", *(s for s in SMALL if not s.startswith("train.schedule.warmup"))]


def run_demo(run_dir: Path, *overrides: str, overwrite: bool = False, **kwargs) -> dict:
    from pipelines.load import load_pipeline
    from pipelines.runner import run_pipeline

    pipeline = load_pipeline(DEMO, [*DEMO_RUN, *overrides])
    return run_pipeline(pipeline, run_dir, context=quiet(overwrite=overwrite), **kwargs)


@pytest.fixture(scope="session")
def demo_baseline(tmp_path_factory) -> tuple[Path, dict]:
    pytest.importorskip("trainer.plot")
    run_dir = tmp_path_factory.mktemp("demo-baseline") / "run"
    return run_dir, run_demo(run_dir)


@pytest.fixture
def demo_run(demo_baseline, tmp_path) -> tuple[Path, dict]:
    """A copy of the baseline run (its directory, its report), for a test to change."""
    source, report = demo_baseline
    copy = tmp_path / "run"
    shutil.copytree(source, copy, symlinks=True)
    return copy, report
