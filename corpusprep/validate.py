"""`corpusprep validate`: what every output's check shares (its manifest's files, problem lines relative to
the directory) and the checks of the kinds without a producer module of their own (a pipeline run, a demo
corpus). Which kind a directory holds and which validator checks it: the registry, `engine.outputs`."""

from __future__ import annotations

from pathlib import Path

from corpusprep.engine import outputs, storage
from corpusprep.engine.manifest import MANIFEST, problems
from corpusprep.engine.records import load_record
from corpusprep.errors import DataError, plural


def owned_problems(directory: Path, reported: list[str]) -> list[str]:
    """Files the artifact manifest lists that are missing or changed, unless `reported` names them already;
    a missing manifest is itself a problem: the stages that read a vocab or pairs refuse the directory."""
    if not storage.exists(directory / MANIFEST):
        return [f"{MANIFEST}: missing, so build-pairs and shard refuse this directory (not a "
                "finished corpusprep output); build it again in a new directory"]
    named = {line.split(":")[0] for line in reported}
    found = [str(Path(p).relative_to(directory)) if p.startswith(str(directory)) else p
             for p in problems(directory, checksums=True)]
    return [line for line in found if line.split(":")[0] not in named]


def relative(message: str, directory: Path) -> str:
    """A problem line naming a file of `directory` by its path relative to it."""
    prefix = f"{directory}/"
    return message[len(prefix):] if message.startswith(prefix) else message


def validate_artifact(directory: Path) -> tuple[list[str], str]:
    """An artifact without checks of its own (a demo corpus): every file its manifest lists unchanged."""
    return owned_problems(directory, []), ""


def validate_pipeline(directory: Path) -> tuple[list[str], str]:
    """A pipeline run directory: its records by their loaders, and every stage output found in it, each
    checked as what it is."""
    problems, found = [], []
    checked = [(directory / "run.json", "pipeline_run")]
    checked += [(p, "stage_done") for p in storage.glob(directory / "stages", "*.done.json")]
    checked += [(p, "stage_started") for p in storage.glob(directory / "stages", "*.started.json")]
    for path, kind in checked:
        try:
            load_record(path, kind)
        except (OSError, DataError) as error:
            problems.append(relative(str(error), directory))
    subs = [p for p in storage.rglob(directory, "*") if not p.name.startswith((".", "_"))]
    for sub in (p for p in subs if storage.is_dir(p)):
        kind = outputs.kind_of(sub)
        if kind and kind.name != "pipeline" and not any(sub.is_relative_to(d) for d in found):
            found.append(sub)
            sub_problems, _ = kind.validate(sub)
            problems += [f"{sub.relative_to(directory)}/ ({kind.title}): {p}" for p in sub_problems]
    return problems, f"{plural(len(found), 'stage output')} checked"
