"""What every stage kind is: `StageKind` (check its settings, run it, validate its output), the context it
runs in (`StageContext`) and what it returns (`StageResult`). The kinds themselves are in `pipelines.stages`
(the training stage in `pipelines.train_stage`)."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpusprep.engine import manifest as manifests
from corpusprep.engine.stage import RunContext
from corpusprep.errors import UsageError
from pipelines.config import Stage


@dataclass(frozen=True, kw_only=True)
class StageContext(RunContext):
    """How a stage runs (a `RunContext`, handed whole to the stage's driver: where data preparation's tasks
    run; `overwrite` True: replace what is there, False: resume or repair the same settings' work; progress),
    and where it reads and writes."""

    run_dir: Path
    out: Path
    inputs: list[str]  # the corpus: the user's paths, or the demo corpus file
    dirs: dict[str, Path]  # output directory of every stage, by name
    # `corpusprep run --extend`: the record of the finished stage this run continues (a train stage whose
    # schedule grew: `TrainStage.continuation`), None to build as the settings say
    continue_from: dict[str, Any] | None = None

    def corpus(self, stage: Stage) -> list[str]:
        """What the stage reads as its corpus: the curate stage's output when it has one, else the inputs."""
        return [str(self.dirs["curate"])] if stage.needs.get("corpus") == "curate" else self.inputs

    def need(self, stage: Stage, role: str) -> Path:
        """The output directory of the stage this one reads in `role` ("vocab", "pairs", "shards", ...)."""
        return self.dirs[stage.needs[role]]


@dataclass(frozen=True)
class StageResult:
    counts: dict[str, Any]  # what the stage reports: documents, pairs, examples, steps, ...
    unit: str | None = None  # counts[unit] per second is the stage's throughput
    files: tuple[str, ...] | None = None  # the outputs, relative to the out dir (None: its artifact's files)


def _options(cls: type, section: dict[str, Any], where: str):
    """`cls(**section)`, with an unknown key or a value of the wrong type reported as the pipeline key it came
    from (corpusprep.settings); `check` calls it for every stage before anything is written."""
    from corpusprep.settings import check_settings

    return cls(**check_settings(cls, section, where))


def _read_options(stage: Stage):
    from corpusprep.read import ReadOptions

    return _options(ReadOptions, stage.settings["read"], "input")


class StageKind(abc.ABC):
    """What a kind of stage does. Subclasses set `kind`, implement `run` and override what differs."""

    kind = ""
    parallel = False  # runs its tasks on the pipeline's executor (else in this process: reported as local)

    def check(self, stage: Stage) -> None:
        """Build the stage's options without running it: a typo in the last stage fails before the first."""
        if "read" in stage.settings:
            _read_options(stage)

    def check_places(self, stage: Stage, dirs: dict[str, Path]) -> None:
        """Checks of the settings against the run's directories (`dirs`: every stage's output), before
        anything is written."""
        return None

    def extension_problem(self, stage: Stage, previous: dict[str, Any]) -> str | None:
        """Why `corpusprep run --extend` cannot continue this stage's finished output (its record
        `previous`) under the new settings; None where it can. Read without torch, to say so up front."""
        return f"a {stage.kind} stage is rebuilt, never continued"

    def continuation(self, stage: Stage, dirs: dict[str, Path], previous: dict[str, Any]) -> int:
        """`--extend`: the step from which this stage's finished output continues (`dirs`: every stage's
        output); a UsageError saying why it cannot."""
        raise UsageError(f"--extend: {stage.name}: {self.extension_problem(stage, previous)}")

    @abc.abstractmethod
    def run(self, stage: Stage, ctx: StageContext) -> StageResult: ...

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        """Problems with the finished output, one line each ([] when it is complete and valid)."""
        return manifests.problems(ctx.out)

    def input_files(self, stage: Stage) -> list[str]:
        """Files outside the run the stage reads besides the corpus: the runner fingerprints them (path,
        size, mtime), so an edited file reruns the stage."""
        return []
