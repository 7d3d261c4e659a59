"""What each stage kind runs (the library functions of the stage commands) and how its output is validated.

`RUN[kind](stage, ctx) -> StageResult` and `VALIDATE[kind](stage, ctx) -> problems`. Imports are local so
that planning a pipeline (or `--until pairs`) never imports torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpusprep.engine.files import atomic_path, read_json, write_json
from corpusprep.errors import DataError, UsageError
from pipelines.config import Stage
from pipelines.runner import StageContext, StageResult


def _options(cls: type, section: dict[str, Any], where: str):
    """`cls(**section)`, with an unknown key or a value of the wrong type reported as the pipeline key it came
    from (corpusprep.settings); `check` calls it for every stage before anything is written."""
    from corpusprep.settings import check_settings

    return cls(**check_settings(cls, section, where))


def _read_options(stage: Stage):
    from corpusprep.read import ReadOptions

    return _options(ReadOptions, stage.settings["read"], "input")


def _fresh(ctx: StageContext) -> None:
    """A stage rerun with other settings starts from an empty output directory."""
    if ctx.overwrite and ctx.out.exists():
        shutil.rmtree(ctx.out)


# corpus --------------------------------------------------------------------------------------------------


def run_corpus(stage: Stage, ctx: StageContext) -> StageResult:
    from corpusprep.demo_corpus import DEFAULT_MAX_MB, write_demo_corpus

    stats = write_demo_corpus(ctx.out / "demo.jsonl", stage.settings["max_mb"] or DEFAULT_MAX_MB).to_dict()
    write_json(ctx.out / "demo_stats.json", stats)
    counts = {k: stats[k] for k in ("modules", "docstrings", "documents", "dropped")}
    return StageResult({**counts, "MB": round(stats["bytes"] / 1e6, 3)}, unit="documents")


def validate_corpus(stage: Stage, ctx: StageContext) -> list[str]:
    path = ctx.out / "demo.jsonl"
    return [] if path.is_file() and path.stat().st_size > 0 else [f"{path}: missing or empty"]


# vocab ---------------------------------------------------------------------------------------------------


def run_vocab(stage: Stage, ctx: StageContext) -> StageResult:
    from corpusprep.tokenize.vocab import VocabOptions, build_vocab

    # Vocab training has no partial results to resume from: an interrupted one starts over.
    shutil.rmtree(ctx.out, ignore_errors=True)
    options = _options(VocabOptions, stage.settings["vocab"], "vocab")
    report = build_vocab(ctx.inputs, ctx.out, options, _read_options(stage))
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


def validate_vocab(stage: Stage, ctx: StageContext) -> list[str]:
    from corpusprep.tokenize import VocabInfo

    try:
        info = VocabInfo.load(ctx.out)
        info.tokenizer()
    except UsageError as error:
        return [str(error)]
    return []


# pairs ---------------------------------------------------------------------------------------------------


def run_pairs(stage: Stage, ctx: StageContext) -> StageResult:
    from corpusprep.pair.build import PairOptions, build_pairs

    options = _options(PairOptions, stage.settings["pairs"], "pairs")
    stats = build_pairs(
        ctx.inputs,
        ctx.dirs["vocab"],
        ctx.out,
        options,
        _read_options(stage),
        workers=ctx.workers,
        engine=ctx.engine,
        ray_address=ctx.ray_address,
        overwrite=ctx.overwrite,
        progress=ctx.progress,
    )
    skipped = stats.get("documents_skipped", {})
    counts = {
        "documents": stats["documents"],  # = documents_used + documents_skipped
        "documents_used": stats["documents_used"],
        "documents_skipped": sum(skipped.values()),
        "skipped": skipped,
        # what the reader dropped before pairing (bad lines, empty documents; empty or binary files):
        # documents_read = documents + sum(read_skipped), so the report accounts for every input document
        "documents_read": stats["read"]["documents_seen"],
        "read_skipped": stats["read"]["skipped"],
        "files_skipped": stats["read"]["skipped_files"],
        "pairs": stats["pairs"],
        "is_next": stats["is_next"],
        "not_next": stats["not_next"],
        "MB": round(stats["read"]["bytes"] / 1e6, 3),
    }
    return StageResult(counts, unit="pairs")


def validate_pairs(stage: Stage, ctx: StageContext) -> list[str]:
    import pyarrow.parquet as pq

    stats_file = ctx.out / "stats.json"
    if not stats_file.is_file():
        return [f"{stats_file}: missing"]
    files = sorted(ctx.out.glob("*/part-*.parquet"))
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    expected = read_json(stats_file).get("pairs")
    if expected is not None and rows != expected:
        return [f"{ctx.out}: {rows} pairs in the Parquet files, stats.json says {expected}"]
    return [] if rows else [f"{ctx.out}: no pairs"]


# shard ---------------------------------------------------------------------------------------------------


def run_shard(stage: Stage, ctx: StageContext) -> StageResult:
    from corpusprep.shard.build import ShardOptions, build_shards

    pairs_stage = next(n for n in stage.needs if n.startswith("pairs"))
    options = _options(ShardOptions, stage.settings["shard"], "shard")
    manifest = build_shards(
        ctx.dirs[pairs_stage],
        ctx.dirs["vocab"],
        ctx.out,
        options,
        workers=ctx.workers,
        engine=ctx.engine,
        ray_address=ctx.ray_address,
        overwrite=ctx.overwrite,
        progress=ctx.progress,
    )
    counts = dict(manifest["totals"])
    for split, info in manifest["splits"].items():
        counts[f"{split}_examples"] = info["examples"]
        counts[f"{split}_shards"] = len(info["shards"])
    return StageResult(counts, unit="examples")


def validate_shard(stage: Stage, ctx: StageContext) -> list[str]:
    from corpusprep.shard.validate import validate_shards

    return [str(p) for p in validate_shards(ctx.out)]


# train ---------------------------------------------------------------------------------------------------


RUNNER_KEYS = ("processes",)  # [train] keys for the runner, not the trainer


def train_config(stage: Stage, dirs: dict[str, Path], resume: bool = True) -> dict[str, Any]:
    """The trainer's config for a train stage: the pipeline's [train] table plus the run dir's paths."""
    section = {k: dict(v) if isinstance(v, dict) else v for k, v in stage.settings["train"].items()}
    for key in RUNNER_KEYS:
        section.pop(key, None)
    section.setdefault("data", {})["shards"] = str(dirs[stage.needs[0]].resolve())
    section.setdefault("logging", {})["run_dir"] = str(dirs[stage.name].resolve())
    # An interrupted run resumes from its newest checkpoint; a rerun with new settings starts over.
    section.setdefault("checkpoint", {})["resume"] = resume
    if len(stage.needs) > 2:  # start from the previous phase's final weights
        from trainer.config import CheckpointConfig

        if "init_from" not in {f.name for f in dataclasses.fields(CheckpointConfig)}:
            raise UsageError(
                f"{stage.name}: this trainer cannot start from the previous phase's weights (no "
                "checkpoint.init_from); set train.init_from_previous = false to train the phase from scratch"
            )
        section["checkpoint"]["init_from"] = str(dirs[stage.needs[2]].resolve())
    return section


def write_train_toml(path: Path, config: dict[str, Any]) -> None:
    """The trainer config as TOML, for `[torchrun ...] python -m trainer.run FILE` (JSON scalars are TOML)."""
    lines = []
    for key, value in sorted(config.items()):
        if isinstance(value, dict):
            lines += [f"{key}.{k} = {json.dumps(v)}" for k, v in sorted(value.items()) if v is not None]
        elif value is not None:
            lines.append(f"{key} = {json.dumps(value)}")
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n")


def train_toml_path(stage: Stage, dirs: dict[str, Path]) -> Path:
    return dirs[stage.name].parent / f"{stage.name}.toml"


def write_train_configs(stages: tuple[Stage, ...], dirs: dict[str, Path]) -> None:
    """Every train stage's config file, written up front: after `corpusprep run --until shard`, training can
    be launched by hand with torchrun on any number of nodes (docs/cluster.md)."""
    for stage in stages:
        if stage.kind == "train":
            with contextlib.suppress(UsageError):  # a config that cannot be built fails its stage, clearly
                write_train_toml(train_toml_path(stage, dirs), train_config(stage, dirs))


def run_train(stage: Stage, ctx: StageContext) -> StageResult:
    _fresh(ctx)
    config = train_config(stage, ctx.dirs, resume=not ctx.overwrite)
    config_file = train_toml_path(stage, ctx.dirs)
    write_train_toml(config_file, config)
    processes = int(stage.settings["train"].get("processes", 1))
    if processes > 1:
        # One process per device (DDP) under torchrun on this node; see docs/cluster.md for several nodes.
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={processes}",
            "-m",
            "trainer.run",
            str(config_file),
        ]
        if subprocess.run(command).returncode != 0:
            raise DataError(f"{stage.name}: torchrun failed (command: {' '.join(command)})")
        summary = _last_metrics(ctx.out)
    else:
        from trainer.config import load_config
        from trainer.train import train

        summary = train(load_config(config_file))
    counts = {k: v for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return StageResult(counts, unit="steps")


def _last_metrics(run_dir: Path) -> dict[str, Any]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return json.loads(lines[-1]) if lines else {}


def validate_train(stage: Stage, ctx: StageContext) -> list[str]:
    from trainer.checkpoint import latest, read_config

    found = latest(ctx.out)
    if found is None:
        return [f"{ctx.out}: no checkpoint"]
    steps = stage.settings["train"].get("schedule", {}).get("steps")
    saved = int(found.name.split("-")[1])
    if steps is not None and saved < steps:
        return [f"{found}: last checkpoint is step {saved}, not the {steps} asked for"]
    read_config(found)
    return []


# plot ----------------------------------------------------------------------------------------------------


def run_plot(stage: Stage, ctx: StageContext) -> StageResult:
    """`python -m trainer.plot TRAIN_DIR` in its own process: keeps matplotlib out of the runner."""
    command = [sys.executable, "-m", "trainer.plot", str(ctx.out)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise DataError(f"{stage.name}: {' '.join(command)} failed: {last}")
    pngs = sorted(p.name for p in ctx.out.glob("*.png"))
    return StageResult({"plots": len(pngs)}, files=tuple(pngs))


def validate_plot(stage: Stage, ctx: StageContext) -> list[str]:
    return [] if any(ctx.out.glob("*.png")) else [f"{ctx.out}: no PNG curves"]


def check(stage: Stage) -> None:
    """Build the stage's options without running it: a typo in the last stage fails before the first runs."""
    settings = stage.settings
    if stage.kind == "vocab":
        from corpusprep.tokenize.vocab import VocabOptions

        _options(VocabOptions, settings["vocab"], "vocab")
    if "read" in settings:
        _read_options(stage)
    if stage.kind == "pairs":
        from corpusprep.pair.build import PairOptions

        _options(PairOptions, settings["pairs"], "pairs")
    elif stage.kind == "shard":
        from corpusprep.shard.options import ShardOptions

        _options(ShardOptions, settings["shard"], "shard")
    elif stage.kind == "train":
        from trainer.config import load_config

        load_config({k: v for k, v in settings["train"].items() if k not in RUNNER_KEYS})


RUN: dict[str, Callable[[Stage, StageContext], StageResult]] = {
    "corpus": run_corpus,
    "vocab": run_vocab,
    "pairs": run_pairs,
    "shard": run_shard,
    "train": run_train,
    "plot": run_plot,
}
VALIDATE: dict[str, Callable[[Stage, StageContext], list[str]]] = {
    "corpus": validate_corpus,
    "vocab": validate_vocab,
    "pairs": validate_pairs,
    "shard": validate_shard,
    "train": validate_train,
    "plot": validate_plot,
}
