"""A pipeline's run directory: what the runner writes there itself, and the rule for a directory it did not
make, the artifact rule (engine.artifact) applied to the runner's own files.

The stages' outputs are artifacts, each in its own directory. Beside them the runner writes its records:
`run.json` (which pipeline the directory belongs to; written first), `pipeline.json`, `report.json`,
`report.md`, `stages/` (each stage's start and done records) and each train stage's trainer config
(`train.toml`, `PHASE/train-PHASE.toml`). A directory whose `run.json` the runner wrote is a run directory,
and those names are its own. Any other directory:

- empty or absent, or holding only what a run starting there writes before `run.json` (its lock, the
  temporary name `run.json` is written under): a new run directory; a run starting there now refuses at
  its lock, one killed while starting left what the runner clears;
- holding files and no `--overwrite`: refused;
- with `--overwrite`: a file named like one of the runner's own is refused (move it away first: never
  written over, never deleted); every other file is left in place and named, and the stages write beside
  them, each under the artifact rule (with `--overwrite`, they too remove only what they own);
- another command's output (an artifact, a training run, a checkpoint): refused, even with `--overwrite`.

Every refusal comes before anything is made: a refused run leaves no directory and no lock behind, and
a run refused at the lock, which another run holds, leaves that run's lock and directory alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from corpusprep.engine import manifest as manifests
from corpusprep.engine import outputs, records, storage
from corpusprep.engine.files import parse_temp
from corpusprep.engine.lock import LOCK_NAME, exclusive_dir
from corpusprep.errors import DataError, UsageError
from pipelines.config import Pipeline
from pipelines.train_stage import train_toml_path

RUN_FILE = "run.json"  # names the pipeline a run dir belongs to
STAGES_DIR = "stages"
RECORDS = (RUN_FILE, "pipeline.json", "report.json", "report.md", STAGES_DIR)
# what the runner writes, as patterns: its killed writes' temporaries are removed at start (the stages'
# own outputs are artifacts, which clear theirs)
TEMP_PATTERNS = (RUN_FILE, "pipeline.json", "report.json", "report.md", f"{STAGES_DIR}/*.json", "*.toml",
                 "*/*.toml")


def runner_names(pipeline: Pipeline, run_dir: Path) -> list[str]:
    """The names (relative to the run dir) the runner itself writes for this pipeline."""
    dirs = {s.name: run_dir / s.output for s in pipeline.stages}
    configs = [train_toml_path(s, dirs).relative_to(run_dir).as_posix() for s in pipeline.stages
               if s.kind == "train"]
    return [*RECORDS, *configs]


def owner(run_dir: Path) -> str | None:
    """The pipeline whose run the directory holds (its `run.json`); None when the runner did not write it."""
    try:
        record = records.load_record(run_dir / RUN_FILE, "pipeline_run", missing_ok=True)
    except DataError:  # not the runner's record (or damaged: then it is no longer known whose)
        return None
    return record["pipeline"] if record else None


def check_run_dir(run_dir: Path, pipeline: Pipeline, overwrite: bool) -> list[str]:
    """Refuse a run dir this run may not write into (the module's rule); returns the files it keeps there
    that the runner did not write (with --overwrite), to be named."""
    if storage.exists(run_dir) and not storage.is_dir(run_dir):
        raise UsageError(f"{run_dir}: exists and is not a directory; pick another --run-dir")
    if not storage.is_dir(run_dir):
        return []
    found = manifests.read_manifest(run_dir)
    if found is not None or storage.exists(run_dir / manifests.MANIFEST):  # never, even with --overwrite
        kind = found["kind"] if found else "an output"
        raise UsageError(f"{run_dir}: holds corpusprep {kind}, not a pipeline run; pick another --run-dir")
    other = outputs.recognise(run_dir)
    if other is not None and other.kind != "pipeline":  # never, even with --overwrite
        raise UsageError(f"{run_dir}: holds {other.what}, not a pipeline run; pick another --run-dir")
    name = owner(run_dir)
    if name is not None:
        if name != pipeline.name and not overwrite:
            raise UsageError(f"{run_dir}: holds a run of pipeline {name!r}, not {pipeline.name!r}; pick "
                             "another --run-dir or pass --overwrite")
        return []
    entries = sorted(p.name for p in storage.list_dir(run_dir) if not _of_a_run_starting(p.name))
    if not entries:
        return []
    if storage.exists(run_dir / RUN_FILE):
        raise UsageError(f"{run_dir / RUN_FILE}: not a record corpusprep wrote, so this is no run directory "
                         "of its; move it away (or pick another --run-dir) first")
    if not overwrite:
        raise UsageError(f"{run_dir}: exists and is not a corpusprep run directory; pass --overwrite to "
                         "write beside its files (never over them), or pick another --run-dir")
    if clash := [n for n in runner_names(pipeline, run_dir) if storage.exists(run_dir / n)]:
        raise UsageError(f"{run_dir / clash[0]}: named like a file of a pipeline run, but no corpusprep run "
                         "wrote it; move it away (or pick another --run-dir) first")
    return entries


def _of_a_run_starting(name: str) -> bool:
    """The lock, or the temporary name of `run.json` (the first record a run writes): what a run starting in
    the directory has written there so far, never a user's file."""
    temp = parse_temp(name)
    return name == LOCK_NAME or (temp is not None and temp[0] == RUN_FILE)


@contextlib.contextmanager
def held(run_dir: Path, pipeline: Pipeline, overwrite: bool) -> Iterator[list[str]]:
    """Check the run dir, then hold its writer's lock and check it again (another run may have written
    there between): yields the files kept there (`check_run_dir`). A run refused, at either check, leaves
    nothing behind: not the lock file, nor the directory the lock would have made. Refused at the lock,
    the lock file and the directory are the run's that holds it (it may have made both since the first
    check): left alone."""
    check_run_dir(run_dir, pipeline, overwrite)
    made = not storage.exists(run_dir)
    with exclusive_dir(run_dir):
        try:
            yield check_run_dir(run_dir, pipeline, overwrite)
        except UsageError:
            if made:  # refused under its own lock: the lock file and the directory are this run's
                _remove_if_only_lock(run_dir)
            raise


def _remove_if_only_lock(run_dir: Path) -> None:
    """The directory this run made, when the lock is all it holds."""
    with contextlib.suppress(OSError):
        if [p.name for p in storage.list_dir(run_dir)] == [LOCK_NAME]:
            storage.remove(run_dir / LOCK_NAME)
            storage.rmdir(run_dir)
