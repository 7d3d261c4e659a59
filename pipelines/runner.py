"""`corpusprep run`: run a pipeline's stages in order, skipping those whose outputs are complete and current.

A stage is complete when its marker (`RUN_DIR/stages/NAME.done.json`, written after its outputs were
validated) holds the stage's current fingerprint (settings + inputs' fingerprints + corpusprep version)
and every file it lists is still there with its recorded size. A changed setting changes that stage's
fingerprint and so every later stage's: they rerun, the earlier ones do not. A stage that was interrupted
resumes (its `started` record matches; the stage functions skip their finished tasks); a stage whose
settings changed starts over. Training launched by hand with torchrun into the run dir is picked up too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console

import corpusprep
from corpusprep.engine.files import read_json, remove_stale_temps, write_json
from corpusprep.engine.lock import LOCK_NAME, exclusive_dir
from corpusprep.errors import DataError, UsageError
from pipelines.config import Pipeline, fingerprint, select

RUN_FILE = "run.json"  # names the pipeline a run dir belongs to
STAGES_DIR = "stages"


@dataclass(frozen=True)
class StageContext:
    """Where a stage reads and writes, and how its parallel work is scheduled (never what it computes)."""

    run_dir: Path
    out: Path
    inputs: list[str]  # the corpus: the user's paths, or the demo corpus file
    dirs: dict[str, Path]  # output directory of every stage, by name
    engine: str = "local"
    ray_address: str | None = None
    workers: int | None = None
    overwrite: bool = False  # True: replace what is there; False: resume the same settings' unfinished work
    progress: bool = True


@dataclass(frozen=True)
class StageResult:
    counts: dict[str, Any]  # what the stage reports: documents, pairs, examples, steps, ...
    unit: str | None = None  # counts[unit] per second is the stage's throughput
    files: tuple[str, ...] | None = None  # the outputs, relative to the out dir (None: all files in it)


def input_fingerprint(paths: list[str]) -> str:
    """Files as (path, size, mtime): hashing a many-GB corpus on every run would cost minutes."""
    from corpusprep.read.inputs import resolve_inputs

    files = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p, _ in resolve_inputs(paths)]
    return fingerprint("input", {"files": files}, {}, "")


def list_outputs(out: Path, files: tuple[str, ...] | None) -> dict[str, int]:
    """Relative path -> size of a stage's outputs (hidden files: locks and temporaries, left out)."""
    if files is None:
        paths = [p for p in out.rglob("*") if p.is_file() and not any(s.startswith(".") for s in p.parts)]
        files = tuple(p.relative_to(out).as_posix() for p in paths)
    return {f: (out / f).stat().st_size for f in sorted(files)}


def outputs_intact(out: Path, recorded: dict[str, int]) -> bool:
    return all((out / f).is_file() and (out / f).stat().st_size == size for f, size in recorded.items())


def check_run_dir(run_dir: Path, name: str, overwrite: bool) -> None:
    """A run dir holds one pipeline's run: refuse a foreign or another pipeline's one without --overwrite."""
    run_file = run_dir / RUN_FILE
    if run_file.is_file():
        owner = read_json(run_file).get("pipeline")
        if owner != name and not overwrite:
            raise UsageError(
                f"{run_dir}: holds a run of pipeline {owner!r}, not {name!r}; pick another --run-dir or "
                "pass --overwrite"
            )
    elif any(p.name != LOCK_NAME for p in run_dir.iterdir()) and not overwrite:
        raise UsageError(
            f"{run_dir}: exists and is not a corpusprep run directory; pass --overwrite to use it"
        )


def run_pipeline(
    pipeline: Pipeline,
    run_dir: str | Path,
    *,
    engine: str = "local",
    ray_address: str | None = None,
    workers: int | None = None,
    until: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    console: Console | None = None,
) -> dict[str, Any]:
    """Run (or skip) every stage up to `until`; write and return the run report."""
    from pipelines import report, stages

    console = console or Console(stderr=True, soft_wrap=True)  # whole lines in logs, whatever the width
    run_dir = Path(run_dir)
    selected = select(pipeline.stages, until)
    started = time.perf_counter()
    for stage in selected:
        stages.check(stage)
    with exclusive_dir(run_dir):
        check_run_dir(run_dir, pipeline.name, overwrite)
        removed = remove_stale_temps(run_dir)
        if removed:
            console.print(f"removed {removed} temporary file(s) left by an interrupted run")
        write_json(run_dir / RUN_FILE, {"pipeline": pipeline.name, "source": str(pipeline.source)})
        write_json(run_dir / "pipeline.json", pipeline.config)

        dirs = {s.name: run_dir / s.output for s in pipeline.stages}
        inputs = (
            [str(dirs["corpus"] / "demo.jsonl")] if pipeline.demo_input else pipeline.config["input"]["paths"]
        )
        fingerprints = {} if pipeline.demo_input else {"input": input_fingerprint(inputs)}
        stages.write_train_configs(pipeline.stages, dirs)
        records = []
        for number, stage in enumerate(selected, 1):
            needs = {need: fingerprints[need] for need in stage.needs}
            fp = fingerprints[stage.name] = fingerprint(
                stage.kind, stage.settings, needs, corpusprep.__version__
            )
            label = f"[{number}/{len(selected)}] {stage.name}"
            done_file = run_dir / STAGES_DIR / f"{stage.name}.done.json"
            done = read_json(done_file) if done_file.is_file() else None
            out = dirs[stage.name]
            if not overwrite and done and done["fingerprint"] == fp and outputs_intact(out, done["outputs"]):
                console.print(f"{label}: complete, skipped")
                records.append({**done, "status": "skipped"})
                continue
            start_file = run_dir / STAGES_DIR / f"{stage.name}.started.json"
            started_as = read_json(start_file)["fingerprint"] if start_file.is_file() else None
            # Replace the outputs only when this runner made them with other settings (or --overwrite); else
            # the stage resumes its own interrupted work, or refuses a directory it did not write.
            fresh = overwrite or started_as not in (None, fp)
            done_file.unlink(missing_ok=True)  # the old outputs are about to change
            write_json(start_file, {"fingerprint": fp})
            console.rule(f"{label} ({'resuming' if started_as == fp else 'running'})", align="left")
            ctx = StageContext(run_dir, out, inputs, dirs, engine, ray_address, workers, fresh, progress)
            t0 = time.perf_counter()
            result = stages.RUN[stage.kind](stage, ctx)
            seconds = time.perf_counter() - t0
            problems = stages.VALIDATE[stage.kind](stage, ctx)
            if problems:
                raise DataError(f"{out}: {stage.name} output failed validation: {'; '.join(problems[:3])}")
            record = {
                "stage": stage.name,
                "kind": stage.kind,
                "phase": stage.phase,
                "fingerprint": fp,
                "settings": stage.settings,
                "inputs": needs,
                "output": stage.output,
                "outputs": list_outputs(out, result.files),
                "counts": result.counts,
                "unit": result.unit,
                "seconds": round(seconds, 3),
                "engine": engine if stage.kind in ("pairs", "shard") else "local",
                "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
            write_json(done_file, record)
            console.print(f"{label}: done in {seconds:.1f} s {report.rate_text(record)}")
            records.append({**record, "status": "ran"})
        ran = sum(r["status"] == "ran" for r in records)
        summary = report.write_report(run_dir, pipeline, records, time.perf_counter() - started)
    if ran == 0:
        console.print(f"{run_dir}: every stage complete; nothing to do")
    console.print(f"report: {run_dir / 'report.md'}")
    return summary

