"""What a run will do, said before it does it: which finished stages rerun and why, one line each
(`corpusprep run` prints them before the first stage runs). The runner's fingerprints decide; this reads the
stages' records to say why: a changed setting, a changed input file, another corpusprep version, lost
output files, or an earlier stage that reruns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corpusprep.engine.manifest import describe_changes
from pipelines.config import Stage


@dataclass
class Rerun:
    """Why a finished stage runs again: its own `reasons`, or the earlier stages (`after`) that rerun."""

    stage: Stage
    reasons: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    repair: bool = False  # only files lost or changed: the same settings rebuild them


def predict(
    selected: tuple[Stage, ...],
    previous: dict[str, dict[str, Any] | None],
    outside_inputs: Callable[[Stage], dict[str, str]],
    version: str,
    intact: Callable[[Stage, dict[str, Any]], bool],
    digest: Callable[[str], str | None],
) -> dict[str, Rerun]:
    """The finished stages (a record in `previous`) that will run again, by name, in run order.
    `outside_inputs(stage)`: the fingerprints of the files outside the run it reads now (the corpus,
    task files); `intact(stage, record)`: whether its recorded outputs are all there; `digest(name)`: the
    content digest of a finished stage's output as it is now."""
    reruns: dict[str, Rerun] = {}
    for stage in selected:
        done = previous.get(stage.name)
        if done is None:
            continue
        rerun = Rerun(stage, [_changed(c) for c in describe_changes(done["settings"], stage.settings)])
        for name, now in outside_inputs(stage).items():
            if done["inputs"].get(name) != now:
                rerun.reasons.append("the corpus files changed" if name == "input" else f"{name} changed")
        if done.get("version", version) != version:
            rerun.reasons.append(f"made by corpusprep {done['version']}, this is {version}")
        for name in stage.needs.values():  # an earlier stage that will not rerun, its output not the one read
            if previous.get(name) and name not in reruns and done["inputs"].get(name) != digest(name):
                rerun.reasons.append(f"{name}'s output is not the one it was built from")
        rerun.after = [n for n in stage.needs.values() if n in reruns and not reruns[n].repair]
        if not rerun.reasons and not rerun.after and not intact(stage, done):
            rerun.reasons, rerun.repair = ["output files missing or changed"], True
        if rerun.reasons or rerun.after:
            reruns[stage.name] = rerun
    return reruns


def _changed(change: str) -> str:
    """describe_changes' 'x.y: "15m" -> "30m"' as 'x.y changed "15m" -> "30m"'."""
    key, _, values = change.partition(": ")
    return f"{key} changed {values}"


def lines(reruns: dict[str, Rerun], steps: dict[str, int], continued: dict[str, int],
          extendable: set[str]) -> list[str]:
    """One line per stage rerun for a reason of its own, naming what follows it. `steps`: the steps each
    finished train stage trained; `continued`: the train stages --extend continues, from which step;
    `extendable`: those it could continue."""

    def outcome(name: str) -> str:
        rerun = reruns[name]
        if name in continued:
            return f"continues from step {continued[name]:,} (--extend)"
        if rerun.repair:
            return "rebuilds them"
        if rerun.stage.kind == "train":
            hint = (f" (--extend continues from step {steps[name]:,} instead)"
                    if name in extendable and name in steps else "")
            return f"training restarts from step 0{hint}"
        return "reruns"

    def followers(name: str) -> list[str]:
        found: list[str] = []
        for other, rerun in reruns.items():
            if any(a == name or a in found for a in rerun.after):
                found.append(other)
        return found

    out = []
    for name, rerun in reruns.items():
        if not rerun.reasons:
            continue
        then = [f"{f} (training from step 0)" if reruns[f].stage.kind == "train" and f not in continued else f
                for f in followers(name)]
        tail = f"; after it: {', '.join(then)}" if then else ""
        out.append(f"{name}: {'; '.join(rerun.reasons[:3])}: {outcome(name)}{tail}")
    return out
