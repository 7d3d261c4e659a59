"""The evaluation: the pre-trained model beside the same architecture randomly initialised, each fine-tuned
with the same settings and seeds, scored on dev (and test), summarised with a verdict.

Its output directory is an artifact (`corpusprep.engine.artifact`), like every stage's output (without one,
a temporary directory): each fine-tuning run is a task, run by the executor in a process pool, that writes
its record in `runs/` and its predictions on each scored split in `predictions/` (`{init}-seed{N}-{split}
.jsonl`, one JSON line per example: `TaskKind.record`), so a killed evaluation resumes after its last
finished run and a rerun with the same model, data and settings does nothing (a task kind may write files
in its field's own format beside them: `TaskKind.side_files`, SQuAD's `predictions.json`);
`evaluation.json` (each run's scores under their metrics' names, and the summary) and `evaluation.md` (the
page `python -m trainer.evaluate` prints) are written last. With `grid`, every configuration's runs are tasks
(`{init}-lr{LR}-b{B}-e{E}-seed{N}`); each model's configuration is chosen on dev by its median headline
score, and its runs' predictions are also written under the plain names.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from corpusprep.engine import storage
from corpusprep.engine.artifact import Artifact
from corpusprep.engine.executor import OUTPUTS_KEY, Task, default_workers, marker_path
from corpusprep.engine.files import write_json
from corpusprep.engine.records import load_record
from corpusprep.errors import DataError
from corpusprep.read.inputs import input_files
from trainer.evaluate import curves, finetune, published, summary
from trainer.evaluate.data import TaskData
from trainer.evaluate.model import model_files, model_shape, pretrained
from trainer.evaluate.random_runs import RandomRuns
from trainer.evaluate.readers import read_task
from trainer.evaluate.settings import EvalSettings, size_of
from trainer.evaluate.tasks import headline

KIND = "evaluate"  # the artifact kind, as the pipeline stage is named
RESULT, PAGE = "evaluation.json", "evaluation.md"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Job:
    """What the fine-tuning runs need, sent to a pool worker."""

    hf_dir: Path
    data: TaskData
    settings: EvalSettings
    out: Path
    threads: int  # torch threads of the run: 1 on a CPU (see workers_for)
    random_runs: RandomRuns | None = None  # a store of random-init runs to reuse and add to


def run_name(init: str, seed: int, config: tuple | None) -> str:
    if config is None:
        return f"{init}-seed{seed}"
    lr, batch, epochs = config
    return f"{init}-lr{lr:g}-b{batch}-e{epochs:g}-seed{seed}"


def tasks(settings: EvalSettings, job: Job, configs: list[tuple]) -> list[Task]:
    """A task per (configuration, seed, model): both models of a seed one after the other, so a stopped
    evaluation has whole pairs to compare."""
    found = []
    for config in configs:
        for seed in settings.seed_list:
            for init in finetune.INITS:
                name = run_name(init, seed, config if len(configs) > 1 else None)
                outputs = (f"runs/{name}.json", *(f"predictions/{name}-{s}.jsonl" for s in job.data.scored))
                found.append(Task(name, (job, init, seed, config), outputs))
    return found


def write_predictions(directory: Path, name: str, data: TaskData, split: str, predictions: list) -> list[str]:
    """`predictions/{name}-{split}.jsonl` (a line per example) and the kind's side files beside it; the
    side files' names, relative to `directory`."""
    kind, examples = data.task, data.scored[split].examples
    lines = [json.dumps(kind.record(e, i, kind.gold(data, e), p), ensure_ascii=False)
             for i, (e, p) in enumerate(zip(examples, predictions, strict=True))]
    stem = f"predictions/{name}-{split}"
    storage.write_text(directory / f"{stem}.jsonl", "".join(line + "\n" for line in lines), encoding="utf-8")
    sides = kind.side_files(data, data.scored[split], predictions)
    for suffix, value in sides.items():
        write_json(directory / f"{stem}.{suffix}", value)
    return [f"{stem}.{suffix}" for suffix in sides]


def run_task(task: Task) -> dict[str, Any]:
    """One fine-tuning run (in a pool worker, or in this process): its record in runs/, its predictions in
    predictions/."""
    job, init, seed, (lr, batch, epochs) = task.args
    shared = job.random_runs if init == "random" else None
    if shared and (reused := shared.take(job.out, task, tuple(job.data.scored))):
        record, files = reused
        write_json(job.out / task.outputs[0], record)
        log(f"  {init:<10} seed {seed}: reused from {shared.directory / record['reused']}")
        return record | {OUTPUTS_KEY: [f for f in files if f not in task.outputs]}
    settings = replace(job.settings, lr=lr, batch_size=batch, epochs=epochs)
    threads = torch.get_num_threads()
    torch.set_num_threads(job.threads)
    started = time.perf_counter()
    try:
        found = finetune.run(job.hf_dir, job.data, settings, init, seed)
    finally:
        torch.set_num_threads(threads)
    sides = [name for split, predictions in found["predictions"].items()
             for name in write_predictions(job.out, task.id, job.data, split, predictions)]
    record = {"init": init, "seed": seed, "config": {"lr": lr, "batch_size": batch, "epochs": epochs},
              "scores": found["scores"], "epoch": found["epoch"], "curve": found["curve"],
              "diverged": found["diverged"], "collapsed": found["collapsed"], "state": found["state"],
              "encoded": found["encoded"], "threads": job.threads,
              "seconds": round(time.perf_counter() - started, 2)}
    write_json(job.out / task.outputs[0], record)
    if shared:
        shared.keep(job.out, task, record, [*task.outputs[1:], *sides])
    shown = " ".join(f"{name} {s[settings.metric]:.4f}" for name, s in found["scores"].items())
    grid = task.id != run_name(init, seed, None)
    config = f" (lr {lr:g}, batch {batch}, {epochs:g} epochs)" if grid else ""
    log(f"  {init:<10} seed {seed}{config}: {shown} (epoch {found['epoch']:g}; {record['seconds']:.0f} s)"
        + (f"; diverged: {found['diverged']}" if found["diverged"] else ""))
    return record | {OUTPUTS_KEY: sides}  # recorded in its marker with the declared outputs


def workers_for(settings: EvalSettings, workers: int | None, runs: int) -> int:
    """Runs at once: one per CPU on a CPU, each on one thread, one on a GPU; never more than there are runs.
    Separate runs use cores better than threads on a small model's matrices, and one thread a run makes
    the numbers independent of how many run at once (torch's CPU kernels sum in another order on another
    number of threads: the same seed on 1 and 2 threads gives weights that differ in the last bits)."""
    if finetune.device_of(settings.device) != "cpu":
        return 1
    return max(1, min(workers or default_workers(), runs))


def prepare(source: str | Path, settings: EvalSettings) -> tuple[TaskData, EvalSettings, list[str], dict]:
    """The task's data and the settings the runs use (`EvalSettings.resolve`: the model size's defaults,
    max_length capped at its positions), every fault before the first run."""
    settings = settings.check()
    finetune.require_transformers()
    data = read_task(settings)
    shape = model_shape(source)
    size = size_of(shape["hidden_size"], shape["num_layers"])
    resolved, notes = settings.resolve(size, shape["max_position"], headline(data.task, settings.metric),
                                       data.kind)
    return data, resolved, notes, shape | {"size": size}


def evaluate(
    source: str | Path,
    settings: EvalSettings,
    out: str | Path | None = None,
    *,
    overwrite: bool = False,
    model_identity: Any = None,
    workers: int | None = None,
    random_runs: str | Path | None = None,
) -> dict[str, Any]:
    """Evaluate the model at `source` (a run dir, a checkpoint or a Hugging Face directory); returns the
    result (`evaluation.json`'s content). `out`: the output directory (an artifact; None: a temporary one).
    `model_identity`: what fingerprints the model (default: its files' paths, sizes and times); the data
    files are fingerprinted as every input is (`read.inputs.input_files`). `workers`: runs at once (None:
    `workers_for`); they do not change the numbers. `random_runs`: a store of random-init runs
    (random_runs.py): one of the same architecture, vocab, data, settings and seed is copied from there, not
    fine-tuned again; the new ones are added. It changes no number either."""
    model_identity = model_identity if model_identity is not None else {"files": model_files(source)}
    data, settings, notes, shape = prepare(source, settings)
    files = [p for p in (settings.train, settings.dev, settings.test) if p]
    identity = {"settings": asdict(settings), "model": model_identity,
                "inputs": {"files": input_files(files)}}
    if out is None:
        with tempfile.TemporaryDirectory(prefix="corpusprep-evaluate-") as scratch, \
                Artifact(scratch, KIND, identity, quiet=True) as art:
            return _build(art, source, data, settings, notes, shape, workers, random_runs)
    inputs = [*files, source]
    with Artifact(out, KIND, identity, inputs=inputs, overwrite=overwrite) as art:
        if art.complete is not None:
            log(f"{out}: complete, nothing to do")
            return load_record(Path(out) / RESULT, "evaluation")
        return _build(art, source, data, settings, notes, shape, workers, random_runs)


def _build(art: Artifact, source: str | Path, data: TaskData, settings: EvalSettings, notes: list[str],
           shape: dict, workers: int | None, random_runs: str | Path | None) -> dict[str, Any]:
    """Run what is not done yet (pool workers), choose, summarise, write the result and the page, commit.
    The notes are said here, once the output is known to be writable: a refused output is one line."""
    for note in notes:
        log(f"note: {note}")
    load, started = os.getloadavg()[0], time.perf_counter()
    configs = settings.configs(shape["size"], data.task.name)
    with pretrained(source, settings.vocab) as model:
        data.task.check_model(model.hf_dir)
        device = finetune.device_of(settings.device)
        threads = 1 if device == "cpu" else torch.get_num_threads()
        shared = RandomRuns.of(random_runs, model.hf_dir, data, settings, threads, device) if random_runs \
            else None
        job = Job(model.hf_dir, data, settings, art.directory, threads, shared)
        todo = tasks(settings, job, configs)
        at_once = workers_for(settings, workers, len(todo))
        log(f"evaluating {model.description}: {data.describe()}; {len(todo)} runs, {at_once} at a time")
        records = art.run(run_task, todo, workers=at_once, stats_kind="evaluate_run")
        check_runs(todo, records, data, art.work / "markers")
        chosen, grid = choose(todo, records, settings)
        extra = copy_chosen(art.directory, todo, chosen, data) if len(configs) > 1 else []
        runs = [records[i] for i in chosen]
        result = summarize(data, settings, runs, model.description, model.cost, storage.url(source), shape)
    seconds = round(sum(r["seconds"] for r in records), 1)  # of the runs, one after the other
    result |= {"notes": notes, "run_count": len(records), "seconds": seconds,
               "wall_seconds": round(time.perf_counter() - started, 1), "runs_at_once": at_once,
               "load_average": load, "cpus": default_workers()}
    if grid:
        result["grid"] = grid
    plotted = [name] if (name := curves.plot(result, art.directory)) else []
    result["curves"] = plotted
    write_json(art.directory / RESULT, result)
    storage.write_text(art.directory / PAGE, summary.markdown(result), encoding="utf-8")
    art.commit(files=[*extra, *plotted, RESULT, PAGE])
    return result


def choose(todo: list[Task], records: list[dict], settings: EvalSettings) -> tuple[list[int], list[dict]]:
    """The runs each model is reported by: its configuration with the best median dev headline score over
    seeds (the grid's; the one configuration otherwise). Returns their indexes (pretrained and random of
    each seed in turn) and, for a grid, every configuration's medians."""
    by: dict[tuple, dict[str, list[int]]] = {}
    for i, task in enumerate(todo):
        _, init, _, config = task.args
        by.setdefault(config, {}).setdefault(init, []).append(i)
    metric = settings.metric
    medians = {c: {init: summary.spread([records[i]["scores"]["dev"][metric] for i in runs])["median"]
                   for init, runs in inits.items()} for c, inits in by.items()}
    best = {init: max(by, key=lambda c, init=init: medians[c][init]) for init in finetune.INITS}
    pairs = zip(*(by[best[init]][init] for init in finetune.INITS), strict=True)
    chosen = [i for pair in pairs for i in pair]
    grid = [{"lr": c[0], "batch_size": c[1], "epochs": c[2], "dev_median": medians[c],
             "chosen": [init for init in finetune.INITS if best[init] == c]} for c in by]
    return chosen, grid if len(by) > 1 else []


def copy_chosen(directory: Path, todo: list[Task], chosen: list[int], data: TaskData) -> list[str]:
    """The chosen configurations' predictions (and side files), also under the plain names
    `{init}-seed{N}-{split}.jsonl`."""
    names = []
    for i in chosen:
        _, init, seed, _ = todo[i].args
        for split in data.scored:
            ran = f"{todo[i].id}-{split}."
            for path in storage.glob(directory / "predictions", f"{ran}*"):
                name = f"predictions/{run_name(init, seed, None)}-{split}.{path.name.removeprefix(ran)}"
                storage.write_bytes(directory / name, storage.read_bytes(path))
                names.append(name)
    return names


def check_runs(todo: list[Task], records: list[dict], data: TaskData, markers: Path) -> None:
    """Each run's record (a finished task's, read back from its marker on a resume: data from disk) is the
    run of its task, (init, seed), and scores every split this evaluation scores; else one line naming the
    record, exit 1."""
    for task, record in zip(todo, records, strict=True):
        _, init, seed, _ = task.args
        missing = [split for split in data.scored if split not in record["scores"]]
        if (record["init"], record["seed"]) != (init, seed):
            problem = f"the run of {record['init']} seed {record['seed']}, not of its task {task.id}"
        elif missing:
            problem = f"scores: no {missing[0]} split, which this evaluation scores"
        else:
            continue
        raise DataError(f"{marker_path(markers, task)}: {problem}; delete it, and its run is made again")


def baseline_scores(data: TaskData, split: str) -> dict[str, Any]:
    """The cheap baseline's scores on a scored split, every metric of the task kind."""
    kind, examples = data.task, data.scored[split].examples
    return kind.score(data, [kind.gold(data, e) for e in examples], kind.baseline(data, data.scored[split]))


def summarize(data: TaskData, settings: EvalSettings, records: list[dict], description: str, cost: dict,
              source: str, shape: dict) -> dict[str, Any]:
    """The chosen runs' scores -> per split: both models' per-seed headline scores, medians, spreads, gain,
    verdict; the other metrics' medians; the cheap baseline and the published figures that apply."""
    kind, metric = data.task, settings.metric
    result: dict[str, Any] = {
        "model": {"source": source, "description": description, "cost": cost},
        "task": data.describe(),
        "kind": data.kind,
        "labels": list(data.labels),
        "metric": metric,
        "metrics": list(kind.metrics),
        "unit": kind.unit,
        "seeds": settings.seed_list,
        "settings": asdict(settings),
        "size": shape["size"],
        "device": finetune.device_of(settings.device),
        "baseline_name": kind.baseline_title(data),
        "splits": {},
        "runs": records,
    }
    by = {(r["init"], r["seed"]): r["scores"] for r in records}
    for split in data.scored:
        base = baseline_scores(data, split)
        scores = {i: [by[i, s][split][metric] for s in settings.seed_list] for i in finetune.INITS}
        found = summary.compare(scores["pretrained"], scores["random"], metric)
        found |= {"baseline": base[metric], "n": by["pretrained", settings.seed][split]["n"]}
        found["metrics"] = {m: {init: statistics.median(by[init, s][split][m] for s in settings.seed_list)
                                for init in finetune.INITS} | {"baseline": base[m]} for m in kind.metrics}
        found["warnings"] = summary.warnings(found, base[metric], result["baseline_name"])
        found["warnings"] += summary.run_warnings(records, split, kind.unit)
        found["published"] = published.figures(published.benchmark_of(settings.benchmark, split),
                                               shape["num_layers"], shape["hidden_size"])
        result["splits"][split] = found
    splits = {"train": data.train, **data.scored}
    if skipped := {n: s.skips.to_dict() for n, s in splits.items() if s.skips.counts}:
        result["skipped"] = skipped
    if replaced := {n: s.invalid_utf8 for n, s in splits.items() if s.invalid_utf8}:
        result["invalid_utf8"] = replaced
    return result
