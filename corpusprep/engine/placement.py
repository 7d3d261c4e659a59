"""Placement: where an output may lie. Never overlapping one of the command's inputs, never inside another
corpusprep output, except for the stages of the pipeline running now inside its run directory
(`pipeline_stages`: an environment variable, so the trainer processes torchrun starts know it too).

Checked before an output's lock is taken: an output that is, contains or lies inside one of the command's
inputs is refused (`check_not_nested`), and so is one inside another output: an artifact, a pipeline or
training run, a checkpoint (`enclosing_output`, `check_not_inside`: every command that writes, the trainer
and the pipeline runner included). The exceptions: the stages of the pipeline running now inside its run
directory; a trainer run dir inside any pipeline run (a train stage launched by hand from the config the
pipeline wrote); the directory a command names as its own (`part_of`: an import's vocab inside its
checkpoint); an export or import directly inside the pipeline run whose output it reads (`runs/demo/hf`
from `runs/demo/train`). The other way round, a corpus walk (corpusprep/read/inputs.py) prunes every
directory holding a manifest, a `.work/run.json`, a lock or another output's signs, and counts it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from corpusprep.engine import storage
from corpusprep.engine.manifest import read_manifest
from corpusprep.engine.outputs import OUTPUT_KINDS, is_artifact_dir, recognise
from corpusprep.errors import UsageError


def check_not_nested(out_dir: str | Path, inputs: Iterable[str | Path], command: str) -> None:
    """Refuse an output directory that is, contains or lies inside one of the inputs."""
    out = storage.resolve(out_dir)
    for arg in inputs:
        src = _input_root(arg)
        if src is not None and (out == src or src in out.parents or out in src.parents):
            raise UsageError(
                f"{command}: the output {out_dir} and the input {arg} overlap; write the output outside the "
                "input (it would read its own output back, or delete its input)"
            )


def _input_root(arg: str | Path) -> Path | None:
    """The file or directory an input argument reads from (a glob: its directory part); None for a path
    that does not exist (the reader reports it). As in `corpusprep.read.inputs`, an existing path is taken
    literally before it is taken as a glob. A URL (`s3://bucket/prefix/*.jsonl`): its part before the first
    wildcard (pathlib's folded form, which `storage.resolve` gives an output URL too)."""
    text = str(arg)
    if storage.scheme_of(text) not in (None, "file"):
        cut = min((text.find(c) for c in "*?[" if c in text), default=-1)
        return storage.resolve(text if cut < 0 else text[:cut].rpartition("/")[0])
    if Path(text).exists():  # a path that exists is what the reader reads, `[`, `*` or `?` in it or not
        return Path(text).resolve()
    cut = min((text.find(c) for c in "*?[" if c in text), default=-1)
    if cut < 0:
        return None
    base = Path(text[:cut] or ".")
    return (base if base.is_dir() and text[cut - 1 : cut] in ("/", "") else base.parent).resolve()


def check_output_file(path: str | Path, inputs: Iterable[str | Path], command: str) -> None:
    """An output file (not a directory): never one of the inputs or inside an input directory (through
    symlinks too), and never inside another command's output directory."""
    target = storage.resolve(path)
    for arg in inputs:
        src = _input_root(arg)
        if src is not None and (target == src or src in target.parents):
            raise UsageError(f"{command}: the output {path} and the input {arg} overlap; write it elsewhere")
    check_not_inside(path, command, "write elsewhere")


def check_not_inside(
    path: str | Path, command: str | None, advice: str, *, pipeline_runs: bool = True,
    part_of: str | Path | None = None,
) -> None:
    """Refuse an output that lies inside another output (`enclosing_output`), one line ending in `advice`;
    `part_of`: the command's own output it may lie in (an import's checkpoint holds its vocab). An output on
    an object store alike: the prefixes above it in its bucket are looked at through the storage seam."""
    found = enclosing_output(directories_above(path), pipeline_runs=pipeline_runs)
    if found and (part_of is None or found[0] != storage.resolve(part_of)):
        prefix = f"{command}: " if command else ""
        raise UsageError(f"{prefix}{storage.url(path)} is inside {found[1]} ({storage.url(found[0])}); "
                         f"{advice}")


def directories_above(path: str | Path) -> list[Path]:
    """The directories above an output: a local path's parents, a URL's prefixes in its bucket (never the
    `s3:` and `.` pathlib's folded `s3:/bucket/key` has above it)."""
    parents = list(storage.resolve(path).parents)
    if storage.scheme_of(path) in (None, "file"):
        return parents
    return [p for p in parents if storage.scheme_of(p) is not None]


PIPELINE_RUN_ENV = "CORPUSPREP_PIPELINE_RUN"  # the run dir of the pipeline running now (`pipeline_stages`)


@contextlib.contextmanager
def pipeline_stages(run_dir: str | Path) -> Iterator[None]:
    """While `corpusprep run` runs its stages: their outputs lie inside its run directory, which is then no
    other output to them (`enclosing_output`). An environment variable, so the trainer processes that
    torchrun starts for a train stage know it too; any other command run by hand still refuses it."""
    before = os.environ.get(PIPELINE_RUN_ENV)
    os.environ[PIPELINE_RUN_ENV] = str(storage.resolve(run_dir))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PIPELINE_RUN_ENV, None)
        else:
            os.environ[PIPELINE_RUN_ENV] = before


def in_running_pipeline(path: str | Path) -> bool:
    """Does `path` lie inside the run directory of the pipeline running now (`pipeline_stages`)?"""
    own = os.environ.get(PIPELINE_RUN_ENV)
    return bool(own) and Path(own) in storage.resolve(path).parents


def enclosing_output(directories: Iterable[Path], *, pipeline_runs: bool = True) -> tuple[Path, str] | None:
    """The first of `directories` that holds a corpusprep output (an artifact, finished or not, a pipeline
    run, a training run, a model checkpoint) and what it is; None where none does. Every output checks the
    directories above it with this (an artifact, a pipeline or training run dir, an export, a single output
    file), by `outputs.recognise`'s strict signs: a home directory with a `checkpoints/` folder of its own is
    no training run. The pipeline running now (`pipeline_stages`) is passed over: its stages live inside it;
    `pipeline_runs=False` passes over every pipeline run (the trainer: its run dir may be a pipeline's train
    stage, launched by hand with torchrun from the config the pipeline wrote)."""
    own = os.environ.get(PIPELINE_RUN_ENV)
    for directory in directories:
        found = recognise(directory, strict=True)
        if found and found.name == "pipeline" and (
            not pipeline_runs or (own and storage.resolve(directory) == Path(own))
        ):
            continue
        if is_artifact_dir(directory, lock=False):  # a refused command leaves a lock in any folder
            manifest = read_manifest(directory)
            if manifest is None:
                return directory, "a corpusprep output"
            kind = OUTPUT_KINDS.get(manifest["kind"])  # "corpusprep pairs", "a Hugging Face model"
            return directory, kind.what if kind else f"corpusprep {manifest['kind']}"
        if found:
            return directory, found.what
    return None


