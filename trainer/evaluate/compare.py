"""The evaluation: the pre-trained model beside the same architecture randomly initialised, each fine-tuned
with the same settings and seeds, scored on dev (and test), summarised with a verdict.

Its output directory is an artifact (`corpusprep.engine.artifact`), like every stage's output (without one,
a temporary directory): each fine-tuning run is a task with its record in `runs/`, run by the executor in a
process pool, so a killed evaluation resumes after its last finished run and a rerun with the same model,
data and settings does nothing; `evaluation.json` (all of it) and `evaluation.md` (the page `python -m
trainer.evaluate` prints) are written last.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from corpusprep.engine import storage
from corpusprep.engine.artifact import Artifact
from corpusprep.engine.executor import Task, default_workers, marker_path
from corpusprep.engine.files import write_json
from corpusprep.engine.records import load_record
from corpusprep.errors import DataError
from corpusprep.read.inputs import input_files
from trainer.evaluate import finetune, summary
from trainer.evaluate.data import TaskData, most_frequent_baseline, read_task
from trainer.evaluate.model import model_files, pretrained
from trainer.evaluate.settings import EvalSettings

KIND = "evaluate"  # the artifact kind, as the pipeline stage is named
RESULT, PAGE = "evaluation.json", "evaluation.md"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Job:
    """What one fine-tuning run needs, sent to a pool worker."""

    hf_dir: Path
    data: TaskData
    settings: EvalSettings
    out: Path
    threads: int  # torch threads of the run: 1 on a CPU (see workers_for)


def tasks(settings: EvalSettings, job: Job) -> list[Task]:
    """A task per (seed, model): both models of a seed one after the other, so a stopped evaluation has
    whole pairs to compare."""
    return [Task(f"{init}-seed{seed}", (job, init, seed), (f"runs/{init}-seed{seed}.json",))
            for seed in settings.seed_list for init in finetune.INITS]  # fmt: skip


def run_task(task: Task) -> dict[str, Any]:
    """One fine-tuning run (in a pool worker, or in this process): its record, also in runs/."""
    job, init, seed = task.args
    threads = torch.get_num_threads()
    torch.set_num_threads(job.threads)
    started = time.perf_counter()
    try:
        scores = finetune.run(job.hf_dir, job.data, job.settings, init, seed)
    finally:
        torch.set_num_threads(threads)
    record = {"init": init, "seed": seed, "scores": scores, "threads": job.threads,
              "seconds": round(time.perf_counter() - started, 2)}  # fmt: skip
    write_json(job.out / task.outputs[0], record)
    shown = " ".join(f"{name} {s['accuracy']:.4f}" for name, s in scores.items())
    log(f"  {init:<10} seed {seed}: {shown} ({record['seconds']:.0f} s)")
    return record


def workers_for(settings: EvalSettings, workers: int | None) -> int:
    """Runs at once: one per CPU on a CPU, each on one thread, one on a GPU; never more than there are runs.
    Separate runs use cores better than threads on a small model's matrices, and one thread a run makes
    the numbers independent of how many run at once (torch's CPU kernels sum in another order on another
    number of threads: the same seed on 1 and 2 threads gives weights that differ in the last bits)."""
    if finetune.device_of(settings.device) != "cpu":
        return 1
    return max(1, min(workers or default_workers(), 2 * settings.seeds))


def evaluate(
    source: str | Path,
    settings: EvalSettings,
    out: str | Path | None = None,
    *,
    overwrite: bool = False,
    model_identity: Any = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """Evaluate the model at `source` (a run dir, a checkpoint or a Hugging Face directory); returns the
    result (`evaluation.json`'s content). `out`: the output directory (an artifact; None: a temporary one).
    `model_identity`: what fingerprints the model (default: its files' paths, sizes and times); the data
    files are fingerprinted as every input is (`read.inputs.input_files`). `workers`: runs at once (None:
    `workers_for`); they do not change the numbers."""
    settings = settings.check()
    model_identity = model_identity if model_identity is not None else {"files": model_files(source)}
    finetune.require_transformers()
    data = read_task(settings)  # every fault before the first run
    files = [p for p in (settings.train, settings.dev, settings.test) if p]
    identity = {"settings": asdict(settings), "model": model_identity,
                "inputs": {"files": input_files(files)}}  # fmt: skip
    if out is None:
        with tempfile.TemporaryDirectory(prefix="corpusprep-evaluate-") as scratch, \
                Artifact(scratch, KIND, identity, quiet=True) as art:  # fmt: skip
            return _build(art, source, data, settings, workers)
    inputs = [*files, source]
    with Artifact(out, KIND, identity, inputs=inputs, overwrite=overwrite) as art:
        if art.complete is not None:
            log(f"{out}: complete, nothing to do")
            return load_record(Path(out) / RESULT, "evaluation")
        return _build(art, source, data, settings, workers)


def _build(art: Artifact, source: str | Path, data: TaskData, settings: EvalSettings,
           workers: int | None) -> dict[str, Any]:  # fmt: skip
    """Run what is not done yet (pool workers), summarise, write the result and the page, commit."""
    load, started = os.getloadavg()[0], time.perf_counter()
    at_once = workers_for(settings, workers)
    with pretrained(source, settings.vocab) as model:
        log(f"evaluating {model.description}: {data.describe()}; {2 * settings.seeds} runs, "
            f"{at_once} at a time")
        threads = 1 if finetune.device_of(settings.device) == "cpu" else torch.get_num_threads()
        job = Job(model.hf_dir, data, settings, art.directory, threads)
        todo = tasks(settings, job)
        records = art.run(run_task, todo, workers=at_once, stats_kind="evaluate_run")
        check_runs(todo, records, data, art.work / "markers")
        result = summarize(data, settings, records, model.description, model.cost, storage.url(source))
    result |= {"wall_seconds": round(time.perf_counter() - started, 1), "runs_at_once": at_once,
               "load_average": load, "cpus": default_workers()}  # fmt: skip
    write_json(art.directory / RESULT, result)
    storage.write_text(art.directory / PAGE, summary.markdown(result), encoding="utf-8")
    art.commit(files=[RESULT, PAGE])
    return result


def check_runs(todo: list[Task], records: list[dict], data: TaskData, markers: Path) -> None:
    """Each run's record (a finished task's, read back from its marker on a resume: data from disk) is the
    run of its task, (init, seed), and scores every split this evaluation scores; else one line naming the
    record, exit 1."""
    for task, record in zip(todo, records, strict=True):
        _, init, seed = task.args
        missing = [split for split in data.scored if split not in record["scores"]]
        if (record["init"], record["seed"]) != (init, seed):
            problem = f"the run of {record['init']} seed {record['seed']}, not of its task {task.id}"
        elif missing:
            problem = f"scores: no {missing[0]} split, which this evaluation scores"
        else:
            continue
        raise DataError(f"{marker_path(markers, task)}: {problem}; delete it, and its run is made again")


def summarize(data: TaskData, settings: EvalSettings, records: list[dict], description: str,
              cost: dict, source: str) -> dict[str, Any]:  # fmt: skip
    """The runs' scores -> per split: both models' per-seed scores, means, spreads, gain, verdict."""
    baselines = most_frequent_baseline(data)
    name = "most frequent tag per word" if data.kind == "tag" else "majority class"
    result: dict[str, Any] = {
        "model": {"source": source, "description": description, "cost": cost},
        "task": data.describe(),
        "kind": data.kind,
        "labels": list(data.labels),
        "metric": "accuracy",
        "unit": "words" if data.kind == "tag" else "rows",
        "seeds": settings.seed_list,
        "settings": asdict(settings),
        "device": finetune.device_of(settings.device),
        "baseline_name": name,
        "splits": {},
        "runs": records,
        "seconds": round(sum(r["seconds"] for r in records), 1),  # of the runs, one after the other
    }
    by = {(r["init"], r["seed"]): r["scores"] for r in records}
    for split in data.scored:
        scores = {i: [by[i, s][split]["accuracy"] for s in settings.seed_list] for i in finetune.INITS}
        found = summary.compare(scores["pretrained"], scores["random"])
        found |= {"baseline": baselines[split], "n": by["pretrained", settings.seed][split]["n"]}
        found["warnings"] = summary.warnings(found, baselines[split], name)
        result["splits"][split] = found
    splits = {"train": data.train, **data.scored}
    if skipped := {n: s.skips.to_dict() for n, s in splits.items() if s.skips.counts}:
        result["skipped"] = skipped
    if replaced := {n: s.invalid_utf8 for n, s in splits.items() if s.invalid_utf8}:
        result["invalid_utf8"] = replaced
    return result
