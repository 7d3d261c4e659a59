"""`corpusprep run`: run a pipeline's stages in order, skipping those whose outputs are complete and current.

Every stage writes an artifact (`corpusprep.engine.artifact`). A stage is complete when its marker
(`RUN_DIR/stages/NAME.done.json`, written after its output was validated) holds the stage's current
fingerprint and every file its artifact owns is still there with its recorded size. The fingerprint is made
of the stage's settings, the corpusprep version and its inputs: the files it reads from outside the run
(path, size, mtime) and, for each earlier stage it reads, the content digest of that stage's output as it
is now (sha256 of its files, `manifest.content_digest`), never that stage's settings. So whatever changed
an output (a setting, an input file, a training run whose budget bought other steps, a repair that did not
give the same bytes) reruns every stage that reads it, and a deterministic repair reruns nothing after it.

A stage that reruns replaces its outputs with overwrite (the artifact removes only what it owns); one that
was interrupted, or whose output lost files, runs again with the same settings: its artifact resumes or
repairs at task granularity. Before the first stage runs, the runner says which finished stages rerun and
why (`pipelines.changes`). Training launched by hand with torchrun into the run dir is picked up too, and
`--extend` continues a finished training whose schedule grew instead of starting it over.
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
from corpusprep.engine import placement, records, storage
from corpusprep.engine.executor import LocalExecutor
from corpusprep.engine.files import remove_stale_temps, write_json
from corpusprep.engine.manifest import sha256_file
from corpusprep.engine.stage import RunContext
from corpusprep.errors import CorpusprepError, DataError, UsageError
from corpusprep.read.inputs import input_files
from pipelines import changes, report, rundir, stages, train_stage
from pipelines.config import Pipeline, Stage, check_paths, fingerprint, select
from pipelines.stage_kind import StageContext

RUN_FILE, STAGES_DIR = rundir.RUN_FILE, rundir.STAGES_DIR


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
                                "again)") from None


def output_digest(out: Path, files: tuple[str, ...] | None) -> str:
    """What a later stage's fingerprint takes of this stage's output: its artifact's content digest, or the
    sha256 of the files it names."""
    if files is None:
        return manifests.content_digest(out)
    return fingerprint("files", {f: sha256_file(records.inside(out, f)) for f in sorted(files)}, {}, "")


def run_pipeline(
    pipeline: Pipeline,
    run_dir: str | Path,
    *,
    context: RunContext | None = None,
    until: str | None = None,
    extend: bool = False,
    console: Console | None = None,
) -> dict[str, Any]:
    """Run (or skip) every stage up to `until`; write and return the run report. `context`: where data
    preparation's tasks run, --overwrite (redo every stage), --progress (default: `RunContext()`);
    `extend`: continue the finished train stages whose schedule grew (`TrainStage.continuation`) instead of
    training from step 0."""
    context = context or RunContext()
    overwrite = context.overwrite
    if extend and overwrite:
        raise UsageError("--extend continues finished training, --overwrite redoes every stage: pick one")
    console = console or stderr_console()
    run_dir = Path(run_dir)
    selected = select(pipeline.stages, until)
    started = time.perf_counter()
    dirs = {s.name: run_dir / s.output for s in pipeline.stages}
    inputs, known = _check_before_writing(pipeline, run_dir, dirs)
    with rundir.held(run_dir, pipeline, overwrite) as kept, placement.pipeline_stages(run_dir):
        if kept:  # as an artifact says of the files beside it
            names = ", ".join(kept[:5])
            console.print(f"{storage.url(run_dir)}: left in place, not written by corpusprep: {names}")
        previous = {s.name: _record(_done_file(run_dir, s), "stage_done") for s in selected}
        continued = _announce(selected, previous, known, dirs, extend, console)
        removed = remove_stale_temps(run_dir, rundir.TEMP_PATTERNS)
        if removed:
            console.print(f"removed {removed} temporary file(s) or folder(s) left by an interrupted run")
        _forget_moved_outputs(selected, previous, run_dir, console)
        write_json(run_dir / RUN_FILE, {"pipeline": pipeline.name, "source": str(pipeline.source)})
        write_json(run_dir / "pipeline.json", pipeline.config)
        train_stage.write_train_configs(pipeline.stages, dirs)
        ran = []
        for number, stage in enumerate(selected, 1):
            label = f"[{number}/{len(selected)}] {stage.name}"
            continue_from = previous[stage.name] if stage.name in continued else None
            ctx = StageContext(**vars(context), run_dir=run_dir, out=dirs[stage.name], inputs=inputs,
                               dirs=dirs, continue_from=continue_from)
            ran.append(_run_stage(stage, ctx, known, label, console))
        summary = report.write_report(run_dir, pipeline, ran, time.perf_counter() - started)
    if not any(r["status"] == "ran" for r in ran):
        console.print(f"{storage.url(run_dir)}: every stage complete; nothing to do")
    console.print(f"report: {storage.url(run_dir / 'report.md')}")
    return summary


def _done_file(run_dir: Path, stage: Stage) -> Path:
    return run_dir / STAGES_DIR / f"{stage.name}.done.json"


def _check_before_writing(
    pipeline: Pipeline, run_dir: Path, dirs: dict[str, Path]
) -> tuple[list[str], dict[str, str]]:
    """Everything is checked before anything is written: every stage's settings (also those after --until:
    a typo in the last phase fails now), the settings that name places against the run dir, input paths,
    the run dir's place. Returns the corpus's paths and the fingerprints known before any stage runs."""
    for stage in pipeline.stages:
        stages.check(stage)
        stages.STAGE_KINDS[stage.kind].check_places(stage, dirs)
    check_paths(pipeline)
    demo = pipeline.demo_input
    inputs = [str(dirs["corpus"] / "demo.jsonl")] if demo else pipeline.config["input"]["paths"]
    known = {} if demo else {"input": input_fingerprint(inputs)}
    if not demo:
        placement.check_not_nested(run_dir, inputs, "run")
    placement.check_not_inside(run_dir, None, "pick another --run-dir")  # before the lock makes the dir
    return inputs, known


def _outside_inputs(stage: Stage, known: dict[str, str]) -> dict[str, str]:
    """Fingerprints of the files outside the run a stage reads: the corpus ("input"), a task's files."""
    found = {"input": known["input"]} if "input" in stage.needs.values() else {}
    files = stages.STAGE_KINDS[stage.kind].input_files(stage)
    return found | {path: input_fingerprint([path]) for path in files}


def _announce(selected: tuple[Stage, ...], previous: dict, known: dict[str, str], dirs: dict[str, Path],
              extend: bool, console: Console) -> dict[str, int]:
    """Say which finished stages rerun and why, before any does; with `extend`, check that every train
    stage that reruns can continue (else one line, before anything is written). Returns the train stages
    that continue, with the step each continues from."""
    reruns = changes.predict(selected, previous, lambda s: _outside_inputs(s, known), corpusprep.__version__,
                             lambda s, done: outputs_intact(dirs[s.name], done["outputs"]),
                             lambda name: _digest(previous[name], dirs[name]))
    train = {n: r for n, r in reruns.items() if r.stage.kind == "train" and not r.repair}
    extendable = {n for n, r in train.items() if not r.after and _extendable(r.stage, previous[n])}
    continued = {}
    for name, rerun in train.items() if extend else ():
        if not rerun.reasons and rerun.after and set(rerun.after) <= set(continued):
            continue  # a later phase, from the weights of one that continues: trains from step 0 on them
        if rerun.after:
            raise UsageError(f"--extend: {name}: it reads what {', '.join(rerun.after)} rebuilds; a run "
                             "continues only on the same data (drop --extend to train from step 0)")
        continued[name] = stages.STAGE_KINDS[rerun.stage.kind].continuation(rerun.stage, dirs, previous[name])
    steps = {n: int(r["counts"]["steps"]) for n, r in previous.items()
             if r is not None and isinstance(r["counts"].get("steps"), int)}
    for line in changes.lines(reruns, steps, continued, extendable):
        console.print(line)
    return continued


def _extendable(stage: Stage, previous: dict) -> bool:
    try:
        return stages.STAGE_KINDS[stage.kind].extension_problem(stage, previous) is None
    except UsageError:  # settings recorded by an older corpusprep that this one no longer reads
        return False


def _forget_moved_outputs(selected: tuple[Stage, ...], previous: dict, run_dir: Path,
                          console: Console) -> None:
    """A stage whose output directory moved (an older corpusprep plotted into the train stage's): the files
    its record names in the former directory are the runner's, removed before they can pass for a user's."""
    for stage in selected:
        done = previous[stage.name]
        if done is None or done["output"] == stage.output:
            continue
        former = run_dir / done["output"]
        owned = set(manifests.owned_files(former)) | {manifests.MANIFEST}
        recorded = done["outputs"]
        mine = [f for f in recorded if f not in owned and outputs_intact(former, {f: recorded[f]})]
        for name in mine:
            storage.remove(records.inside(former, name, write=True))
        if mine:
            console.print(f"{stage.name}: removed {', '.join(mine[:3])} from {storage.url(former)}, where an "
                          f"older corpusprep wrote it (now in {stage.output})")


def _run_stage(stage: Stage, ctx: StageContext, known: dict[str, str], label: str, console: Console) -> dict:
    """Skip the stage when its record says it is complete with this fingerprint, else run and validate it
    and write its record; its report record ("status": skipped | ran). `ctx.overwrite` is --overwrite;
    `known` holds the digests of the stages run or skipped so far (this stage's is added)."""
    run_dir, out, overwrite = ctx.run_dir, ctx.out, ctx.overwrite
    needs = {name: known[name] for name in stage.needs.values()} | _outside_inputs(stage, known)
    version = corpusprep.__version__
    fp = fingerprint(stage.kind, stage.settings, needs, version)
    done_file = _done_file(run_dir, stage)
    done = _record(done_file, "stage_done")
    intact = done is not None and done["fingerprint"] == fp
    if not overwrite and intact and outputs_intact(out, done["outputs"]):
        console.print(f"{label}: complete, skipped")
        if not isinstance(done.get("digest"), str):  # a record of an older corpusprep: completed once
            done["digest"] = _digest(done, out)
            write_json(done_file, done)
        known[stage.name] = done["digest"]
        return {**done, "status": "skipped"}
    if ctx.continue_from is not None and ctx.continue_from["inputs"] != needs:
        raise UsageError(f"--extend: {stage.name}: its inputs changed since it trained (an earlier stage "
                         "gave another output); drop --extend to train from step 0")
    start_file = run_dir / STAGES_DIR / f"{stage.name}.started.json"
    started_as = (_record(start_file, "stage_started") or {}).get("fingerprint")
    # Replace the outputs only when this runner made them with other settings or inputs (or --overwrite);
    # else the stage resumes or repairs its own work (the artifact rule), continues it (--extend), or
    # refuses a foreign directory.
    fresh = ctx.continue_from is None and (overwrite or started_as not in (None, fp))
    storage.remove(done_file, missing_ok=True)  # the old outputs are about to change
    write_json(start_file, {"fingerprint": fp})
    doing = "continuing" if ctx.continue_from else "resuming" if started_as == fp else "running"
    console.rule(f"{label} ({doing})", align="left")
    ctx = dataclasses.replace(ctx, overwrite=fresh)
    kind = stages.STAGE_KINDS[stage.kind]
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
        "digest": output_digest(out, result.files), "version": version,
    }
    write_json(done_file, record)
    known[stage.name] = record["digest"]
    console.print(f"{label}: done in {seconds:.1f} s {report.rate_text(record)}")
    return {**record, "status": "ran"}


def _digest(done: dict, out: Path) -> str | None:
    """The content digest of a finished stage's output: its record's, else (a record of an older corpusprep)
    computed now from its files; None where they are gone."""
    if isinstance(done.get("digest"), str):
        return done["digest"]
    plain = None if manifests.MANIFEST in done["outputs"] else tuple(done["outputs"])  # no artifact
    try:
        return output_digest(out, plain)
    except (OSError, CorpusprepError):
        return None
