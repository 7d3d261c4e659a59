"""`corpusprep run`: run a pipeline's stages in order, skipping those whose outputs are complete and current.

Every stage writes an artifact (`corpusprep.engine.artifact`). A stage is complete when its marker
(`RUN_DIR/stages/NAME.done.json`, written after its output was validated) holds the stage's current
fingerprint (settings + inputs' fingerprints + corpusprep version) and every file its artifact owns is still
there with its recorded size. A changed setting changes that stage's fingerprint and so every later
stage's: they rerun with overwrite (the artifact removes only what it owns), the earlier ones do not. A stage
that was interrupted, or whose output lost files, runs again with the same settings: its artifact resumes
or repairs at task granularity. Training launched by hand with torchrun into the run dir is picked up too.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console

import corpusprep
from corpusprep.console import console as stderr_console
from corpusprep.engine import manifest as manifests
from corpusprep.engine import outputs, placement, records, storage
from corpusprep.engine.executor import Executor, LocalExecutor, executor_for
from corpusprep.engine.files import remove_stale_temps, write_json
from corpusprep.engine.lock import LOCK_NAME, exclusive_dir
from corpusprep.errors import DataError, UsageError
from corpusprep.read.inputs import input_files
from pipelines import report, stages
from pipelines.config import Pipeline, check_paths, fingerprint, select
from pipelines.stages import StageContext

RUN_FILE = "run.json"  # names the pipeline a run dir belongs to
STAGES_DIR = "stages"
# what the runner writes in its run dir (its killed writes' temporaries are removed at start); the stages'
# own outputs are artifacts, which clear theirs
RUN_FILES = (RUN_FILE, "pipeline.json", "report.json", "report.md", f"{STAGES_DIR}/*.json", "*.toml",
             "*/*.toml")


def input_fingerprint(paths: list[str]) -> str:
    """Files as (path, size, mtime), as every stage fingerprints its inputs (`engine.artifact`)."""
    return fingerprint("input", {"files": input_files(paths)}, {}, "")


def list_outputs(out: Path, files: tuple[str, ...] | None) -> dict[str, int]:
    """Relative path -> size of a stage's outputs: the files its artifact owns (and its manifest), or the
    files it names."""
    if files is None:
        files = (*manifests.owned_files(out), manifests.MANIFEST)
    return {f: storage.stat(records.inside(out, f)).st_size for f in sorted(files)}


def outputs_intact(out: Path, recorded: dict[str, int]) -> bool:
    """Every file a stage record names (each inside the stage's output: records.inside) there, its size."""
    paths = {records.inside(out, f): size for f, size in recorded.items()}
    return all(storage.is_file(p) and storage.stat(p).st_size == size for p, size in paths.items())


def _record(path: Path, kind: str) -> dict | None:
    """A stage record (`stages/NAME.done.json`, kind "stage_done"; `.started.json`, "stage_started"), None
    when absent; a damaged one is one line naming the file and the field."""
    try:
        return records.load_record(path, kind, missing_ok=True)
    except DataError as error:
        raise DataError(f"{error} (not a record corpusprep wrote: delete it, and the stage runs "
                                "again)") from None  # fmt: skip


def check_run_dir(run_dir: Path, name: str, overwrite: bool) -> None:
    """A run dir holds one pipeline's run: refuse a foreign or another pipeline's one without --overwrite."""
    run_file = run_dir / RUN_FILE
    found = manifests.read_manifest(run_dir)
    if found is not None or storage.exists(run_dir / manifests.MANIFEST):  # never, even with --overwrite
        kind = found["kind"] if found else "an output"
        raise UsageError(f"{run_dir}: holds corpusprep {kind}, not a pipeline run; pick another --run-dir")
    other = outputs.recognise(run_dir)
    if other is not None and other.kind != "pipeline":  # never, even with --overwrite
        raise UsageError(f"{run_dir}: holds {other.what}, not a pipeline run; pick another --run-dir")
    if storage.is_file(run_file):
        try:
            owner = records.load_record(run_file, "pipeline_run")["pipeline"]
        except DataError as error:
            if not overwrite:
                raise UsageError(f"{error}; pass --overwrite to use this run dir, or pick another") from None
            owner = name
        if owner != name and not overwrite:
            raise UsageError(
                f"{run_dir}: holds a run of pipeline {owner!r}, not {name!r}; pick another --run-dir or "
                "pass --overwrite"
            )
    elif any(p.name != LOCK_NAME for p in storage.list_dir(run_dir)) and not overwrite:
        raise UsageError(
            f"{run_dir}: exists and is not a corpusprep run directory; pass --overwrite to use it"
        )


def run_pipeline(
    pipeline: Pipeline,
    run_dir: str | Path,
    *,
    executor: Executor | None = None,
    workers: int | None = None,
    until: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    console: Console | None = None,
) -> dict[str, Any]:
    """Run (or skip) every stage up to `until`; write and return the run report. `executor`: where data
    preparation's tasks run (default: the local pool, with `workers` processes)."""
    console = console or stderr_console()
    executor = executor_for(executor, workers)
    run_dir = Path(run_dir)
    selected = select(pipeline.stages, until)
    started = time.perf_counter()
    dirs = {s.name: run_dir / s.output for s in pipeline.stages}
    inputs, fingerprints = _check_before_writing(pipeline, run_dir, dirs, selected)
    with exclusive_dir(run_dir), placement.pipeline_stages(run_dir):
        check_run_dir(run_dir, pipeline.name, overwrite)
        removed = remove_stale_temps(run_dir, RUN_FILES)
        if removed:
            console.print(f"removed {removed} temporary file(s) or folder(s) left by an interrupted run")
        write_json(run_dir / RUN_FILE, {"pipeline": pipeline.name, "source": str(pipeline.source)})
        write_json(run_dir / "pipeline.json", pipeline.config)
        stages.write_train_configs(pipeline.stages, dirs)
        records = []
        for number, stage in enumerate(selected, 1):
            label = f"[{number}/{len(selected)}] {stage.name}"
            ctx = StageContext(run_dir, dirs[stage.name], inputs, dirs, executor, overwrite, progress)
            records.append(_run_stage(stage, ctx, fingerprints, label, console))
        ran = sum(r["status"] == "ran" for r in records)
        summary = report.write_report(run_dir, pipeline, records, time.perf_counter() - started)
    if ran == 0:
        console.print(f"{storage.url(run_dir)}: every stage complete; nothing to do")
    console.print(f"report: {storage.url(run_dir / 'report.md')}")
    return summary


def _check_before_writing(
    pipeline: Pipeline, run_dir: Path, dirs: dict[str, Path], selected: list
) -> tuple[list[str], dict[str, str]]:
    """Everything is checked before anything is written: settings (of every stage, also those after --until:
    a typo in the last phase fails now; only a train stage's trainer checks, which import torch, wait for
    a run that trains), input paths, the run dir's place. Returns the corpus's paths and fingerprint."""
    for stage in pipeline.stages:
        if stage.kind != "train" or stage in selected:
            stages.check(stage)
    check_paths(pipeline)
    demo = pipeline.demo_input
    inputs = [str(dirs["corpus"] / "demo.jsonl")] if demo else pipeline.config["input"]["paths"]
    fingerprints = {} if demo else {"input": input_fingerprint(inputs)}
    if not demo:
        placement.check_not_nested(run_dir, inputs, "run")
    if storage.exists(run_dir) and not storage.is_dir(run_dir):
        raise UsageError(f"{run_dir}: exists and is not a directory; pick another --run-dir")
    placement.check_not_inside(run_dir, None, "pick another --run-dir")  # before the lock makes the dir
    return inputs, fingerprints


def _run_stage(stage, ctx: StageContext, fingerprints: dict[str, str], label: str, console: Console) -> dict:
    """Skip the stage when its record says it is complete with this fingerprint, else run and validate it
    and write its record; its report record ("status": skipped | ran). `ctx.overwrite` is --overwrite."""
    run_dir, out, overwrite = ctx.run_dir, ctx.out, ctx.overwrite
    needs = {name: fingerprints[name] for name in stage.needs.values()}
    kind = stages.KINDS[stage.kind]
    needs |= {path: input_fingerprint([path]) for path in kind.input_files(stage)}
    fp = fingerprints[stage.name] = fingerprint(stage.kind, stage.settings, needs, corpusprep.__version__)
    done_file = run_dir / STAGES_DIR / f"{stage.name}.done.json"
    done = _record(done_file, "stage_done")
    intact = done is not None and done["fingerprint"] == fp
    if not overwrite and intact and outputs_intact(out, done["outputs"]):
        console.print(f"{label}: complete, skipped")
        return {**done, "status": "skipped"}
    start_file = run_dir / STAGES_DIR / f"{stage.name}.started.json"
    started_as = (_record(start_file, "stage_started") or {}).get("fingerprint")
    # Replace the outputs only when this runner made them with other settings (or --overwrite); else
    # the stage resumes or repairs its own work (the artifact rule), or refuses a foreign directory.
    fresh = overwrite or started_as not in (None, fp)
    storage.remove(done_file, missing_ok=True)  # the old outputs are about to change
    write_json(start_file, {"fingerprint": fp})
    console.rule(f"{label} ({'resuming' if started_as == fp else 'running'})", align="left")
    ctx = dataclasses.replace(ctx, overwrite=fresh)
    t0 = time.perf_counter()
    result = kind.run(stage, ctx)
    seconds = time.perf_counter() - t0
    problems = kind.validate(stage, ctx)
    if problems:
        raise DataError(f"{out}: {stage.name} output failed validation: {'; '.join(problems[:3])}")
    record = {
        "stage": stage.name, "kind": stage.kind, "phase": stage.phase, "fingerprint": fp,
        "settings": stage.settings, "inputs": needs, "output": stage.output,
        "outputs": list_outputs(out, result.files), "counts": result.counts, "unit": result.unit,
        "seconds": round(seconds, 3), "engine": ctx.executor.name if kind.parallel else LocalExecutor.name,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    write_json(done_file, record)
    console.print(f"{label}: done in {seconds:.1f} s {report.rate_text(record)}")
    return {**record, "status": "ran"}
