"""Stage kinds: one object per kind says how to check its settings, run it (the library function of the
stage's command) and validate its output. `KINDS[kind].run(stage, ctx) -> StageResult`.

Every stage writes its output directory through `corpusprep.engine.artifact` (the commands do it
themselves; corpus and train are wrapped here), so skip, resume, repair and overwrite follow one rule.
Imports are local so that planning a pipeline (or `--until pairs`) never imports torch.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpusprep import objectives
from corpusprep.engine import artifact, storage
from corpusprep.engine import manifest as manifests
from corpusprep.engine.executor import Executor, LocalExecutor
from corpusprep.engine.files import write_json
from corpusprep.engine.records import load_record, parse_json, read_bytes
from corpusprep.errors import DataError, UsageError
from pipelines.config import RUNNER_TRAIN_KEYS, Stage


@dataclass(frozen=True)
class StageContext:
    """Where a stage reads and writes, and how its parallel work is scheduled (never what it computes)."""

    run_dir: Path
    out: Path
    inputs: list[str]  # the corpus: the user's paths, or the demo corpus file
    dirs: dict[str, Path]  # output directory of every stage, by name
    executor: Executor = field(default_factory=LocalExecutor)  # where data preparation's tasks run
    overwrite: bool = False  # True: replace what is there; False: resume or repair the same settings' work
    progress: bool = True

    def scheduling(self) -> dict[str, Any]:
        """The keyword arguments every data-prep stage function takes for how (never what) it runs."""
        return {"executor": self.executor, "overwrite": self.overwrite, "progress": self.progress}

    def corpus(self, stage: Stage) -> list[str]:
        """What the stage reads as its corpus: the curate stage's output when it has one, else the inputs."""
        return [str(self.dirs["curate"])] if stage.needs.get("corpus") == "curate" else self.inputs

    def need(self, stage: Stage, role: str) -> Path:
        """The output directory of the stage this one reads in `role` ("vocab", "pairs", "shards", ...)."""
        return self.dirs[stage.needs[role]]


@dataclass(frozen=True)
class StageResult:
    counts: dict[str, Any]  # what the stage reports: documents, pairs, examples, steps, ...
    unit: str | None = None  # counts[unit] per second is the stage's throughput
    files: tuple[str, ...] | None = None  # the outputs, relative to the out dir (None: its artifact's files)


def _options(cls: type, section: dict[str, Any], where: str):
    """`cls(**section)`, with an unknown key or a value of the wrong type reported as the pipeline key it came
    from (corpusprep.settings); `check` calls it for every stage before anything is written."""
    from corpusprep.settings import check_settings

    return cls(**check_settings(cls, section, where))


def _read_options(stage: Stage):
    from corpusprep.read import ReadOptions

    return _options(ReadOptions, stage.settings["read"], "input")


class StageKind(abc.ABC):
    """What a kind of stage does. Subclasses set `kind`, implement `run` and override what differs."""

    kind = ""
    parallel = False  # runs its tasks on the pipeline's executor (else in this process: reported as local)

    def check(self, stage: Stage) -> None:
        """Build the stage's options without running it: a typo in the last stage fails before the first."""
        if "read" in stage.settings:
            _read_options(stage)

    @abc.abstractmethod
    def run(self, stage: Stage, ctx: StageContext) -> StageResult: ...

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        """Problems with the finished output, one line each ([] when it is complete and valid)."""
        return manifests.problems(ctx.out)

    def input_files(self, stage: Stage) -> list[str]:
        """Files outside the run the stage reads besides the corpus: the runner fingerprints them (path,
        size, mtime), so an edited file reruns the stage."""
        return []


class CorpusStage(StageKind):
    kind = "corpus"

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.demo_corpus import DEFAULT_MAX_MB, write_demo_corpus

        settings = {"settings": stage.settings}
        with artifact.Artifact(ctx.out, "corpus", settings, overwrite=ctx.overwrite) as out:
            if out.complete is None:
                stats = write_demo_corpus(ctx.out / "demo.jsonl", stage.settings["max_mb"] or DEFAULT_MAX_MB)
                write_json(ctx.out / "demo_stats.json", stats.to_dict())
                out.commit(files=["demo.jsonl", "demo_stats.json"])
        stats = load_record(ctx.out / "demo_stats.json", "demo_stats")
        counts = {k: stats[k] for k in ("modules", "docstrings", "documents", "dropped")}
        return StageResult({**counts, "MB": round(stats["bytes"] / 1e6, 3)}, unit="documents")


class CurateStage(StageKind):
    kind = "curate"
    parallel = True

    def check(self, stage: Stage) -> None:
        from corpusprep.curate.options import CurateOptions

        super().check(stage)
        _options(CurateOptions, stage.settings["curate"], "curate")

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.curate.build import curate
        from corpusprep.curate.options import CurateOptions

        options = _options(CurateOptions, stage.settings["curate"], "curate")
        stats = curate(ctx.corpus(stage), ctx.out, options, _read_options(stage), **ctx.scheduling())
        counts = {"documents": stats["documents"], "kept": stats["kept"], "removed": stats["removed"]}
        return StageResult(counts, unit="documents")

    def input_files(self, stage: Stage) -> list[str]:
        return list(stage.settings["curate"].get("decontaminate", []))


class VocabStage(StageKind):
    kind = "vocab"

    def check(self, stage: Stage) -> None:
        from corpusprep.tokenize.options import VocabOptions

        super().check(stage)
        _options(VocabOptions, stage.settings["vocab"], "vocab")

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.tokenize.options import VocabOptions
        from corpusprep.tokenize.vocab import build_vocab

        options = _options(VocabOptions, stage.settings["vocab"], "vocab")
        report = build_vocab(ctx.corpus(stage), ctx.out, options, _read_options(stage),
                             overwrite=ctx.overwrite)
        docs = report["documents"]
        counts = {
            "vocab_size": report["vocab_size"],
            "documents_read": docs["read"],
            "documents_used": docs["used"],
            "documents_skipped": sum(docs["skipped"].values()),
            "skipped": docs["skipped"],
            "MB": round(report["bytes_read"] / 1e6, 3),
        }
        return StageResult(counts, unit="MB")

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        from corpusprep.tokenize import VocabInfo

        try:
            VocabInfo.load(ctx.out).tokenizer()
        except UsageError as error:
            return [str(error)]
        return super().validate(stage, ctx)


class PairsStage(StageKind):
    kind = "pairs"
    parallel = True

    def check(self, stage: Stage) -> None:
        from corpusprep.pair.build import PairOptions

        super().check(stage)
        _options(PairOptions, stage.settings["pairs"], "pairs")

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.pair.build import PairOptions, build_pairs

        options = _options(PairOptions, stage.settings["pairs"], "pairs")
        stats = build_pairs(
            ctx.corpus(stage),
            ctx.need(stage, "vocab"),
            ctx.out,
            options,
            _read_options(stage),
            **ctx.scheduling(),
        )
        skipped = stats.get("documents_skipped", {})
        read_skipped = stats["read"]["skipped"]
        every_skip = {k: skipped.get(k, 0) + read_skipped.get(k, 0) for k in {*skipped, *read_skipped}}
        counts = {
            # documents_read = documents_used + documents_skipped: the reader's skips (bad lines, empty
            # documents) and the pairing's (no sentences, no partner) together, so every input document
            # is accounted for; `documents` are those the reader passed on
            "documents_read": stats["read"]["documents_seen"],
            "documents": stats["documents"],
            "documents_used": stats["documents_used"],
            "documents_skipped": sum(every_skip.values()),
            "skipped": dict(sorted(every_skip.items())),
            "read_skipped": stats["read"]["skipped"],
            "files_skipped": stats["read"]["skipped_files"],
            "objective": stats.get("objective", objectives.DEFAULT),
            "pairs": stats["pairs"],  # the rows of the files, whatever the objective
            # the objective's own counts: IsNext/NotNext, in order/swapped, or pieces and fill
            **{k: stats[k] for k in OBJECTIVE_COUNTS if k in stats},
            "MB": round(stats["read"]["bytes"] / 1e6, 3),
        }
        return StageResult(counts, unit="pairs")

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:

        problems = super().validate(stage, ctx)
        if problems:
            return problems
        parts = storage.glob(ctx.out, "*/part-*.parquet")
        rows = sum(storage.parquet_file(f).metadata.num_rows for f in parts)
        expected = load_record(ctx.out / "stats.json", "pairs_stats").get("pairs")
        if rows != expected:
            return [f"{ctx.out}: {rows} pairs in the Parquet files, stats.json says {expected}"]
        return [] if rows else [f"{ctx.out}: no pairs"]


OBJECTIVE_COUNTS = ("is_next", "not_next", "not_swapped", "swapped", "rows", "pieces", "fill")


class ShardStage(StageKind):
    kind = "shard"
    parallel = True

    def check(self, stage: Stage) -> None:
        from corpusprep.shard.options import ShardOptions

        _options(ShardOptions, stage.settings["shard"], "shard")

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.shard.build import ShardOptions, build_shards

        options = _options(ShardOptions, stage.settings["shard"], "shard")
        manifest = build_shards(
            ctx.need(stage, "pairs"),
            ctx.need(stage, "vocab"),
            ctx.out,
            options,
            **ctx.scheduling(),
        )
        counts = dict(manifest["totals"])
        for split, info in manifest["splits"].items():
            counts[f"{split}_examples"] = info["examples"]
            counts[f"{split}_shards"] = len(info["shards"])
        return StageResult(counts, unit="examples")

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        from corpusprep.shard.validate import validate_shards

        return [str(p) for p in validate_shards(ctx.out)]


RUNNER_KEYS = tuple(RUNNER_TRAIN_KEYS)  # [train] keys for the runner, not the trainer (checked when planned)


def _name(path: Path) -> str:
    """A stage directory as the trainer's config names it: an absolute local path, or a URL with its `//`."""
    return storage.url(storage.resolve(path))


def train_config(stage: Stage, dirs: dict[str, Path], resume: bool = True) -> dict[str, Any]:
    """The trainer's config for a train stage: the pipeline's [train] table plus the run dir's paths."""
    section = {k: dict(v) if isinstance(v, dict) else v for k, v in stage.settings["train"].items()}
    for key in RUNNER_KEYS:
        section.pop(key, None)
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


class TrainStage(StageKind):
    """The trainer resumes from its own checkpoints; the run dir becomes an artifact once training is done."""

    kind = "train"

    def check(self, stage: Stage) -> None:
        from trainer.config import load_config

        try:
            load_config({k: v for k, v in stage.settings["train"].items() if k not in RUNNER_KEYS})
        except UsageError as error:  # name the phase: "train-seq512: optim.lr: expected float, got 'fast'"
            raise UsageError(f"{stage.name}: {str(error).removeprefix('config: ')}") from None

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        identity = {"settings": stage.settings, "shards": manifests.content_digest(ctx.need(stage, "shards"))}
        if "init" in stage.needs:
            identity["init"] = manifests.content_digest(ctx.need(stage, "init"))
        # KINDS["train"].adopt: checkpoints of a run launched by hand (torchrun, docs/cluster.md) are
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
                out.commit(files=files, record={"summary": summary})
        summary = (manifests.load_manifest(ctx.out) or {}).get("summary", {})
        counts = {k: v for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return StageResult(counts, unit="steps")

    def _train(self, stage: Stage, ctx: StageContext) -> dict[str, Any]:
        config = train_config(stage, ctx.dirs, resume=True)  # resumes only this artifact's own checkpoints
        config_file = train_toml_path(stage, ctx.dirs)
        write_train_toml(config_file, config)
        processes = int(stage.settings["train"].get("processes", 1))
        if processes <= 1:
            from trainer.config import load_config
            from trainer.train import train

            return train(load_config(config_file))
        # One process per device (DDP) under torchrun on this node; see docs/cluster.md for several nodes.
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc-per-node={processes}", "-m", "trainer.run", str(config_file)]
        if subprocess.run(command).returncode != 0:
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


def _last_metrics(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "metrics.jsonl"
    lines = read_bytes(path).decode("utf-8", "replace").splitlines()
    last = parse_json(lines[-1], f"{path}: line {len(lines)}") if lines else {}
    return last if isinstance(last, dict) else {}


class PlotStage(StageKind):
    """Curves into the train stage's directory (which owns `*.png`): the runner records their sizes."""

    kind = "plot"

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        """`python -m trainer.plot TRAIN_DIR` in its own process: keeps matplotlib out of the runner."""
        command = [sys.executable, "-m", "trainer.plot", str(ctx.out)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no message"])[-1]
            raise DataError(f"{stage.name}: {' '.join(command)} failed: {last}")
        pngs = sorted(p.name for p in storage.glob(ctx.out, "*.png"))
        return StageResult({"plots": len(pngs)}, files=tuple(pngs))

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        return [] if storage.glob(ctx.out, "*.png") else [f"{ctx.out}: no PNG curves"]


class EvaluateStage(StageKind):
    """`python -m trainer.evaluate` on the last train stage's model, into an artifact of its own (each
    fine-tuning run a task: a stopped evaluation resumes after its last finished run)."""

    kind = "evaluate"

    @staticmethod
    def settings(stage: Stage):
        from trainer.evaluate.settings import EvalSettings

        return _options(EvalSettings, stage.settings["evaluate"], "evaluate").check("evaluate.")

    def check(self, stage: Stage) -> None:
        self.settings(stage)

    def input_files(self, stage: Stage) -> list[str]:
        settings = self.settings(stage)
        return [p for p in (settings.train, settings.dev, settings.test) if p]

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from trainer.evaluate.compare import evaluate

        model = ctx.need(stage, "train")
        result = evaluate(model, self.settings(stage), ctx.out, overwrite=ctx.overwrite,
                          model_identity=manifests.content_digest(model),
                          workers=ctx.executor.workers)  # fmt: skip
        dev = result["splits"]["dev"]
        # the dev means for the counts table; the whole result for report.md's evaluation section
        counts = {"seeds": len(result["seeds"]), "pretrained": dev["pretrained"]["mean"],
                  "random": dev["random"]["mean"], "gain": dev["gain"]["mean"],
                  "gain_std": dev["gain"]["std"], "baseline": dev["baseline"], "outcome": dev["outcome"],
                  "evaluation": result}  # fmt: skip
        return StageResult(counts)


KINDS: dict[str, StageKind] = {
    k.kind: k for k in (CorpusStage(), CurateStage(), VocabStage(), PairsStage(), ShardStage(), TrainStage(),
                        PlotStage(), EvaluateStage())
}


def check(stage: Stage) -> None:
    KINDS[stage.kind].check(stage)
