"""The train stage: the trainer's config written from a pipeline's [train] table (`train.toml`), training
run as `python -m trainer.run` (or adopted from a torchrun launched by hand), resumed, or continued with
`--extend` when only its limits grew."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from corpusprep.engine import artifact, storage
from corpusprep.engine import manifest as manifests
from corpusprep.engine.records import parse_json, read_bytes
from corpusprep.errors import DataError, UsageError
from pipelines.config import RUNNER_TRAIN_KEYS, Stage
from pipelines.stage_kind import StageContext, StageKind, StageResult

RUNNER_KEYS = tuple(RUNNER_TRAIN_KEYS)  # [train] keys for the runner, not the trainer (checked when planned)


def _name(path: Path) -> str:
    """A stage directory as the trainer's config names it: an absolute local path, or a URL with its `//`."""
    return storage.url(storage.resolve(path))


def trainer_section(settings: dict[str, Any]) -> dict[str, Any]:
    """A train stage's [train] table without the runner's own keys: what the trainer's config reads."""
    section = {k: dict(v) if isinstance(v, dict) else v for k, v in settings["train"].items()}
    for key in RUNNER_KEYS:
        section.pop(key, None)
    return section


def train_config(stage: Stage, dirs: dict[str, Path], resume: bool = True) -> dict[str, Any]:
    """The trainer's config for a train stage: the pipeline's [train] table plus the run dir's paths."""
    section = trainer_section(stage.settings)
    section.setdefault("data", {})["shards"] = _name(dirs[stage.needs["shards"]])
    section.setdefault("logging", {})["run_dir"] = _name(dirs[stage.name])
    # An interrupted run resumes from its newest checkpoint; a rerun with new settings starts over.
    section.setdefault("checkpoint", {})["resume"] = resume
    if "init" in stage.needs:  # start from the previous phase's final weights
        from trainer.config import CheckpointConfig

        if "init_from" not in {f.name for f in dataclasses.fields(CheckpointConfig)}:
            raise UsageError(
                f"{stage.name}: this trainer cannot start from the previous phase's weights (no "
                "checkpoint.init_from); set train.init_from_previous = false to train the phase from scratch"
            )
        section["checkpoint"]["init_from"] = _name(dirs[stage.needs["init"]])
    return section


def write_train_toml(path: Path, config: dict[str, Any]) -> None:
    """The trainer config as TOML, for `[torchrun ...] python -m trainer.run FILE` (JSON scalars are TOML)."""
    lines = []
    for key, value in sorted(config.items()):
        if isinstance(value, dict):
            lines += [f"{key}.{k} = {json.dumps(v)}" for k, v in sorted(value.items()) if v is not None]
        elif value is not None:
            lines.append(f"{key} = {json.dumps(value)}")
    storage.write_text(path, "\n".join(lines) + "\n")


def train_toml_path(stage: Stage, dirs: dict[str, Path]) -> Path:
    return dirs[stage.name].parent / f"{stage.name}.toml"


def write_train_configs(stages: tuple[Stage, ...], dirs: dict[str, Path]) -> None:
    """Every train stage's config file, written up front: after `corpusprep run --until shard`, training can
    be launched by hand with torchrun on any number of nodes (docs/cluster.md)."""
    for stage in stages:
        if stage.kind == "train":
            with contextlib.suppress(UsageError):  # a config that cannot be built fails its stage, clearly
                write_train_toml(train_toml_path(stage, dirs), train_config(stage, dirs))


LIMITS = ("steps", "budget")  # the schedule.* keys a continued run (--extend) may raise


class TrainStage(StageKind):
    """The trainer resumes from its own checkpoints; the run dir becomes an artifact once training is done.
    With `--extend`, a finished run whose schedule grew continues from its last checkpoint
    (`continuation`)."""

    kind = "train"

    @staticmethod
    def config(stage: Stage):
        from trainer.config import load_config

        try:
            return load_config(trainer_section(stage.settings))
        except UsageError as error:  # name the phase: "train-seq512: optim.lr: expected float, got 'fast'"
            raise UsageError(f"{stage.name}: {str(error).removeprefix('config: ')}") from None

    def check(self, stage: Stage) -> None:
        self.config(stage)

    def check_places(self, stage: Stage, dirs: dict[str, Path]) -> None:
        """checkpoint.init_from is never this stage's own output: a rerun clears it before reading it (the
        trainer's own check, trainer.resume.check_init_from)."""
        from trainer.config import load_config
        from trainer.resume import check_init_from

        config = load_config(train_config(stage, dirs))
        longer = "to train a finished run longer, pass --extend (docs/manual/pipelines.md)"
        check_init_from(config, f"{stage.name}: train.", "this stage's own output", longer)

    def extension_problem(self, stage: Stage, previous: dict[str, Any]) -> str | None:
        """Why these settings cannot continue the finished run of record `previous` (None: they can: they
        differ only in a schedule limit that grew, steps or budget, each one the run had and no new one)."""
        from trainer.config import parse_duration

        old, new = (_flat(self.config(dataclasses.replace(stage, settings=s)).to_dict())
                    for s in (previous["settings"], stage.settings))
        limits = {f"schedule.{limit}" for limit in LIMITS}
        if other := [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k) and k not in limits]:
            return f"train.{other[0]} changed too ({old.get(other[0])!r} -> {new.get(other[0])!r})"
        measure = {"steps": lambda v: v, "budget": lambda v: parse_duration(v) if v else None}
        for limit in LIMITS:
            before, after = (measure[limit](c[f"schedule.{limit}"]) for c in (old, new))
            if (before is None) != (after is None) or (before is not None and after < before):
                return (f"schedule.{limit} {old[f'schedule.{limit}']!r} -> {new[f'schedule.{limit}']!r}: a "
                        "run continues with more of the limits it had, never less or a new one")
        return None

    def continuation(self, stage: Stage, dirs: dict[str, Path], previous: dict[str, Any]) -> int:
        """A finished run continues when its settings differ only in a schedule limit that grew
        (`extension_problem`) and its trainer can resume the newest checkpoint under them
        (trainer.resume.resume_conflicts, the check of the trainer's own `--resume`); returns that
        checkpoint's step. The trainer's schedule is then the new limits' (docs/manual/training.md)."""
        from trainer.checkpoint import latest, read_state, saved_train
        from trainer.config import load_config
        from trainer.resume import resume_conflicts

        where = f"--extend: {stage.name}"
        if problem := self.extension_problem(stage, previous):
            raise UsageError(f"{where}: {problem}; a run continues only with more schedule.steps or "
                             "schedule.budget (drop --extend to train from step 0)")
        found = latest(dirs[stage.name])
        if found is None:
            raise UsageError(f"{where}: {dirs[stage.name]}: no checkpoint to continue from (drop --extend)")
        config = load_config(train_config(stage, dirs))
        if conflicts := resume_conflicts(dataclasses.asdict(saved_train(found)), config.to_dict()):
            raise UsageError(f"{where}: {found}: the trainer cannot resume it under the new settings "
                             f"({'; '.join(conflicts[:3])}); drop --extend to train from step 0")
        state = read_state(found)
        if config.schedule.finished(state["step"], state.get("elapsed", 0.0)):  # the other limit stops it
            limits = f"schedule.steps {config.schedule.steps}, schedule.budget {config.schedule.budget!r}"
            raise UsageError(f"{where}: at step {state['step']:,} the run is finished under the new schedule "
                             f"too ({limits}); raise the limit that stops it")
        return int(state["step"])

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        identity = {"settings": stage.settings, "shards": manifests.content_digest(ctx.need(stage, "shards"))}
        if "init" in stage.needs:
            identity["init"] = manifests.content_digest(ctx.need(stage, "init"))
        continued = None
        if ctx.continue_from is not None:
            continued = self.continuation(stage, ctx.dirs, ctx.continue_from)
            # The finished run becomes a training run without a record, which its stage adopts and resumes
            # (engine.outputs: the train kind adopts; the artifact's one rule, engine.artifact)
            storage.remove(ctx.out / manifests.MANIFEST, missing_ok=True)
        # OUTPUT_KINDS["train"].adopt: checkpoints of a run launched by hand (torchrun, docs/cluster.md) are
        # resumed, not refused
        with artifact.Artifact(ctx.out, "train", identity, overwrite=ctx.overwrite) as out:
            if out.complete is None:
                summary = self._train(stage, ctx)
                from trainer.checkpoint import FILES as CHECKPOINT_FILES
                from trainer.checkpoint import list_checkpoints

                # every checkpoint the run keeps is owned: a rerun with other settings removes them all,
                # so it can never resume from one of them
                files = [f"{p.relative_to(ctx.out).as_posix()}/{name}" for _, p in list_checkpoints(ctx.out)
                         for name in CHECKPOINT_FILES]
                files += [name for name in ("metrics.jsonl",) if storage.is_file(ctx.out / name)]
                if continued is not None:
                    summary["continued_from_step"] = continued
                out.commit(files=files, record={"summary": summary})
        summary = (manifests.load_manifest(ctx.out) or {}).get("summary", {})
        counts = {k: v for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return StageResult(counts, unit="steps")

    def _train(self, stage: Stage, ctx: StageContext) -> dict[str, Any]:
        from trainer import threads

        # resumes only this artifact's own checkpoints (a continuation too: --extend)
        config = train_config(stage, ctx.dirs, resume=True)
        config_file = train_toml_path(stage, ctx.dirs)
        write_train_toml(config_file, config)
        processes = int(stage.settings["train"].get("processes", 1))
        if processes <= 1:
            _, line = threads.configure(1)  # before trainer.train imports torch, where it has not yet
            print(line, flush=True)
            from trainer.config import load_config
            from trainer.train import train

            return train(load_config(config_file))
        # One process per device (DDP) under torchrun on this node; see docs/cluster.md for several nodes.
        # Each takes its share of the cores (trainer.threads; torchrun would give each one thread).
        env = {"OMP_NUM_THREADS": str(threads.thread_count(processes))} | dict(os.environ)
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc-per-node={processes}", "-m", "trainer.run", str(config_file)]
        if subprocess.run(command, env=env).returncode != 0:
            raise DataError(f"{stage.name}: torchrun failed (command: {' '.join(command)})")
        return _last_metrics(ctx.out)

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        from trainer.checkpoint import latest, read_config

        found = latest(ctx.out)
        if found is None:
            return [f"{ctx.out}: no checkpoint"]
        schedule = stage.settings["train"].get("schedule", {})
        steps = schedule.get("steps")
        saved = int(found.name.split("-")[1])
        if steps is not None and saved < steps and not schedule.get("budget"):  # a budget may end it first
            return [f"{found}: last checkpoint is step {saved}, not the {steps} asked for"]
        read_config(found)
        return super().validate(stage, ctx)


def _flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"schedule": {"steps": 5}} -> {"schedule.steps": 5}"""
    out: dict[str, Any] = {}
    for key, value in values.items():
        out |= _flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
    return out


def _last_metrics(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "metrics.jsonl"
    lines = read_bytes(path).decode("utf-8", "replace").splitlines()
    last = parse_json(lines[-1], f"{path}: line {len(lines)}") if lines else {}
    return last if isinstance(last, dict) else {}
