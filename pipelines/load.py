"""Loading a pipeline file: parse, apply `--set`, plan the stages (`pipelines.config`), then check every
stage's settings with the stage's own checks (`pipelines.stages`) and every path it reads, before anything
is written. Its own module because it needs both: the stages import the config."""

from __future__ import annotations

from pathlib import Path

from corpusprep.errors import UsageError
from corpusprep.settings import read_toml
from pipelines import stages
from pipelines.config import Pipeline, apply_override, check_paths, plan, resolve_paths


def load_pipeline(
    path: str | Path, overrides: list[str] | None = None, check_inputs: bool = True
) -> Pipeline:
    """The plan of a pipeline file. Relative paths in the file are relative to the file's directory, those
    given with `--set` to the current one. Every setting of every stage (whatever `--until` will select) is
    checked here by the stage's own checks (`stages.check`), and every path it reads (`check_inputs`),
    before anything is written."""
    path = Path(path)
    raw = read_toml(path, "pipeline file")
    resolve_paths(raw, path.parent)
    for item in overrides or []:
        apply_override(raw, item)
    resolve_paths(raw, Path.cwd())  # what --set gave (the file's paths are absolute by now)
    pipeline = plan(raw, path)
    for stage in pipeline.stages:
        try:
            stages.check(stage)
        except UsageError as error:  # "pipelines/x.toml: shard: --masked-lm-prob must be in (0, 1)"
            text = str(error).removeprefix(f"{stage.name}: ")
            raise UsageError(f"{path}: {stage.name}: {text}") from None
    if check_inputs:
        check_paths(pipeline)
    return pipeline
