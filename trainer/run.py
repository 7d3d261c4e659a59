"""`python -m trainer.run [CONFIG.toml] --shards DIR --run-dir DIR [flags] [--set section.key=value ...]`

Multi-GPU / multi-node: `torchrun --nproc-per-node N -m trainer.run ...` (DDP; gloo on CPU).
Needs only torch, numpy and pyarrow, so it runs on a stock PyTorch image.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from corpusprep.console import refuse_stdout
from corpusprep.errors import UsageError
from trainer.command import Command

# direct flags -> config keys (`--set` reaches every other key)
FLAGS = {
    "shards": ("data.shards", str, "SHARDS_DIR with manifest.json, or its s3:// or gs:// URL"),
    "run_dir": ("logging.run_dir", str, "where metrics, config and checkpoints go"),
    "preset": ("model.preset", str, "tiny mini small medium base large, or modern-SIZE (modern-tiny ... "
               "modern-large: those sizes with ModernBERT's options)"),
    "steps": ("schedule.steps", int, "optimizer steps"),
    "budget": ("schedule.budget", str, "training time, e.g. 90s, 15m, 2h: the schedule follows it"),
    "warmup_steps": ("schedule.warmup_steps", int, "linear warm-up steps"),
    "grad_accum": ("schedule.grad_accum", int, "micro-batches per step"),
    "batch_size": ("data.batch_size", int, "sequences per micro-batch per rank"),
    "num_workers": ("data.num_workers", int, "DataLoader workers per rank"),
    "lr": ("optim.lr", float, "peak learning rate"),
    "optimizer": ("optim.name", str, "adamw or lamb"),
    "seed": ("seed", int, "seed of every random draw"),
    "device": ("device", str, "auto, cpu or cuda"),
    "checkpoint_every": ("checkpoint.every", int, "steps between checkpoints"),
    "init_from": ("checkpoint.init_from", str, "start from weights: run dir, step dir, import_hf output"),
    "eval_every": ("eval.every", int, "steps between validation runs"),
    "log_every": ("logging.every", int, "steps between progress lines"),
}
SWITCHES = {
    "resume": ("checkpoint.resume", "continue from the newest checkpoint in the run dir"),
    "verify": ("data.verify", "check every shard's sha256 against the manifest first"),
    "dynamic_masking": ("data.dynamic_masking", "re-mask every epoch from the original tokens"),
    "compile": ("compile", "torch.compile the model"),
    "pre_ln": ("model.pre_ln", "LayerNorm before each sublayer instead of after"),
}


METAVARS = {int: "N", float: "X", str: "NAME"}
TIME_FLAGS = ("budget",)
DIR_FLAGS = ("shards", "run_dir", "init_from")


def config_default(key: str) -> str:
    """The default of a config key as --help shows it ("" when there is none, e.g. data.shards)."""
    from trainer.config import DEFAULT_PRESET, DEFAULT_STEPS, PRESET_LR, WARMUP_SHARE, TrainConfig

    # settings whose dataclass default is None: chosen later, or derived from other settings
    by_preset = ", ".join(f"{name} {lr:.0e}" for name, lr in PRESET_LR.items())
    derived = {
        "model.preset": DEFAULT_PRESET,
        "schedule.steps": f"{DEFAULT_STEPS}; no limit with --budget",
        "schedule.budget": "none, the schedule goes by steps",
        "schedule.warmup_steps": f"{WARMUP_SHARE:.0%} of --steps",
        "optim.lr": f"the preset's: {by_preset}",
    }
    value = TrainConfig()
    for part in key.split("."):
        value = getattr(value, part)
    return derived.get(key, "") if value in (None, "") else str(value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", type=Path, help="TOML file (sections model, data, optim, ...)")
    for name, (key, kind, text) in FLAGS.items():
        default = config_default(key)
        shown = f"{key}; default: {default}" if default else key
        help_text = f"{text} ({shown})".replace("%", "%%")  # argparse expands %-formats in help
        metavar = "DIR" if name in DIR_FLAGS else "TIME" if name in TIME_FLAGS else METAVARS[kind]
        parser.add_argument("--" + name.replace("_", "-"), type=kind, metavar=metavar, help=help_text)
    for name, (key, text) in SWITCHES.items():
        parser.add_argument(
            "--" + name.replace("_", "-"), action="store_true", default=None, help=f"{text} ({key})"
        )
    parser.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="any config key"
    )
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def run(args: argparse.Namespace) -> int:
    """Train as the arguments say. Bad settings or data (exit 2, 1), an OSError (a full disk, a file in the
    way of the run dir) and Ctrl-C, even in the middle of a checkpoint write (130; --resume continues), are
    one line each (`Command.main` runs this under `guarded`)."""
    from trainer import threads
    from trainer.config import load_config

    # values as JSON literals, so a path like `123` stays a string
    given = {n: getattr(args, n) for n in FLAGS if getattr(args, n) is not None}
    overrides = [f"{FLAGS[n][0]}={json.dumps(v)}" for n, v in given.items()]
    overrides += [f"{SWITCHES[n][0]}=true" for n in SWITCHES if getattr(args, n)]
    threads.set_wait_policy()  # before anything imports torch (trainer.threads)
    config = load_config(args.config, overrides + args.set)
    if args.print_config:
        print(config.to_json())
        return 0
    if not config.data.shards:
        raise UsageError("no shards: pass --shards DIR or set data.shards")
    refuse_stdout(config.logging.run_dir, "--run-dir (logging.run_dir)", "a directory")
    _, line = threads.configure()
    if os.environ.get("RANK", "0") == "0":
        print(line, flush=True)
    from trainer.train import train

    train(config)
    return 0


DESCRIPTION = "Pre-train BERT on shards: MLM + NSP or SOP, or MLM alone (the shards' objective)."
CLI = Command("trainer.run", DESCRIPTION, add_arguments, run)
build_parser, main = CLI.parser, CLI.main


if __name__ == "__main__":
    sys.exit(main())
