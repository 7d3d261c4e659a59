"""Several tasks in one evaluation: a pipeline's `[evaluate]` table with a table per task under `tasks`,
the shared settings beside them (a task's own keys win):

    [evaluate]
    seeds = 3
    [evaluate.tasks.upos]
    train = "en_ewt-ud-train.conllu.xz"
    dev = "en_ewt-ud-dev.conllu.xz"
    [evaluate.tasks.ner]
    train = "eng.train"
    dev = "eng.testa"
    test = "eng.testb"

Without `tasks` the table is one task, evaluated into the stage's directory itself (as before several
were possible); with them, each task is an evaluation directory `OUT/NAME/`. Pure Python but for
`evaluate_tasks` (which fine-tunes): the pipeline's planning and report read it without torch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpusprep.errors import UsageError
from trainer.evaluate.settings import EvalSettings

TASKS = "tasks"
PATHS = ("train", "dev", "test", "vocab")  # keys that name files (relative to the pipeline file)
ONE = ""  # the name of the one task of a table without `tasks`


def tables(table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each task's settings table: the shared keys updated by its own ({ONE: table} without `tasks`)."""
    tasks = table.get(TASKS)
    if tasks is None:
        return {ONE: table}
    if not isinstance(tasks, dict) or not tasks or not all(isinstance(t, dict) for t in tasks.values()):
        raise UsageError("evaluate.tasks: a table of tasks, each a table of settings ([evaluate.tasks.NAME])")
    shared = {k: v for k, v in table.items() if k != TASKS}
    return {name: shared | own for name, own in tasks.items()}


def path_entries(table: dict[str, Any]) -> Iterator[tuple[dict, str, str]]:
    """(table, key, where) of every setting that names a file, the tasks' too: for making them absolute
    and checking they exist before anything runs."""
    yield from ((table, k, f"evaluate.{k}") for k in PATHS if k in table)
    tasks = table.get(TASKS)
    for name, own in tasks.items() if isinstance(tasks, dict) else ():
        if isinstance(own, dict):
            yield from ((own, k, f"evaluate.tasks.{name}.{k}") for k in PATHS if k in own)


def settings(table: dict[str, Any]) -> dict[str, EvalSettings]:
    """Each task's settings, checked (`where` in a message: evaluate. or evaluate.tasks.NAME.)."""
    from corpusprep.settings import check_settings

    found = {}
    for name, values in tables(table).items():
        where = f"evaluate.tasks.{name}" if name != ONE else "evaluate"
        found[name] = EvalSettings(**check_settings(EvalSettings, values, where)).check(f"{where}.")
    return found


def evaluate_tasks(model: str | Path, tasks: dict[str, EvalSettings], out: Path,
                   **options) -> dict[str, dict[str, Any]]:
    """Every task's evaluation (the one task's into `out`, several into `out/NAME`)."""
    from trainer.evaluate.compare import evaluate, log

    results = {}
    for name, task in tasks.items():
        if name != ONE:
            log(f"task {name}:")
        results[name] = evaluate(model, task, out / name if name != ONE else out, **options)
    return results


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    """One markdown table across tasks: each scored split's headline medians, gain, baseline and verdict."""
    lines = ["| task | metric | pre-trained | random init | gain | baseline | verdict |",
             "|---|---|---:|---:|---:|---:|---|"]
    for name, result in results.items():
        for split, s in result["splits"].items():
            gain = s["gain"]
            spread = f" ± {gain['std']:.4f}" if gain["std"] is not None else ""
            lines.append(f"| {name or result['kind']} {split} | {result['metric']} | "
                         f"{s['pretrained']['median']:.4f} | {s['random']['median']:.4f} | "
                         f"{gain['median']:+.4f}{spread} | {s['baseline']:.4f} | {s['outcome']} |")
    return lines
