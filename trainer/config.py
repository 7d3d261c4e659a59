"""Training configuration: one dataclass per component, filled from TOML and `section.key=value` overrides,
and every setting's range checked in one place (`validate`). The model's settings (the [model] table, the
architecture and its presets) live in trainer.model_config. Torch-free: reading a config, checking it or
printing --help imports no torch."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, get_args, get_type_hints

from corpusprep.engine.records import parse_json
from corpusprep.errors import DataError, UsageError
from corpusprep.settings import read_toml

# the model's settings; MODERN, PRESETS, PRESET_NAMES, parameter_count and preset are imported from here too
# (`from trainer.config import preset`)
from trainer.model_config import (  # noqa: F401
    DEFAULT_PRESET,
    MODERN,
    PRESET_NAMES,
    PRESETS,
    ModelConfig,
    check_model,
    parameter_count,
    preset,
    preset_size,
)
from trainer.ranges import (
    AT_LEAST_ONE,
    AT_LEAST_ZERO,
    FRACTION,
    NON_NEGATIVE,
    POSITIVE,
    RangeCheck,
    is_fraction,
    is_number,
    is_whole,
    one_of,
)


@dataclass
class DataConfig:
    shards: str = ""  # SHARDS_DIR with manifest.json, or its URL on an object store (s3://, gs://)
    batch_size: int = 32  # sequences per micro-batch per rank
    num_workers: int = 0  # DataLoader worker processes per rank
    chunk_rows: int = 1024  # rows per unit of the global order: row groups, then chunks, shuffled by epoch
    pad_multiple: int = 8  # pad each batch to its longest sequence rounded up to this (tensor-core friendly)
    dynamic_masking: bool = False  # re-mask every epoch from the original tokens
    verify: bool = False  # sha256 every shard against the manifest before training
    # shards on an object store (`s3://...`): fetched into a local cache, each verified once on download
    cache_dir: str = ""  # where the cache makes its folder ("": the temporary directory; trainer/cache.py)
    cache_bytes: int = 8 << 30  # the cache's bound: least recently used shards evicted beyond it (8 GiB)
    prefetch_shards: int = 2  # shards fetched ahead of the reader, in the background (0: none)


# The peak learning rate when optim.lr is not set, by model preset: BERT's 1e-4 (Devlin et al. 2019) from
# small up; the small presets tolerate, and need, larger steps: mini (H256) takes ELECTRA-Small's 5e-4 (Clark
# et al. 2020, same width), tiny (H128) 1e-3; a family's preset ("modern-tiny") takes its size's. A run from
# other weights (checkpoint.init_from) without a preset: BERT's.
PRESET_LR = {"tiny": 1e-3, "mini": 5e-4, "small": 1e-4, "medium": 1e-4, "base": 1e-4, "large": 1e-4}
BERT_LR = 1e-4


@dataclass
class OptimConfig:
    name: str = "adamw"  # adamw | lamb
    lr: float | None = None  # None: the preset's (PRESET_LR), resolved by load_config
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-6
    weight_decay: float = 0.01  # not applied to biases and LayerNorm weights
    grad_clip: float = 1.0  # max global grad norm; 0 = off


WARMUP_SHARE = 0.1  # warm-up when not given: this share of the run (of `steps`, or of the budget)
# How the lr falls over the decay: the share of the peak at `left`, the share of the decay still ahead (1 at
# its start, 0 at the end). linear: BERT's; cosine: half a cosine (Loshchilov & Hutter 2017); 1-sqrt:
# Hagele et al. 2024, whose cooldowns found it best for warm-up-stable-decay.
DECAY_SHAPES: dict[str, Callable[[float], float]] = {
    "linear": lambda left: left,
    "cosine": lambda left: 0.5 * (1 - math.cos(math.pi * left)),
    "1-sqrt": lambda left: 1 - math.sqrt(1 - left),
}
DEFAULT_STEPS = 1000  # `steps` when neither steps nor a budget is given
DURATION = re.compile(r"(\d+(?:\.\d+)?)(s|m|h)")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """Seconds in a duration like "90s", "15m", "2h", "1.5h" or "1h30m"; ValueError otherwise."""
    compact = text.replace(" ", "").lower()
    parts = DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 2h or 1h30m")
    return sum(float(n) * UNIT_SECONDS[u] for n, u in parts)


@dataclass
class ScheduleConfig:
    # optimizer steps; None: DEFAULT_STEPS without a budget, no step limit with one
    steps: int | None = None
    # training time ("90s", "15m", "2h", "1h30m"; "" = none), as Cramming (Geiping & Goldstein 2022): the
    # schedule follows the elapsed share of the budget and the run stops when it is spent. Time counts the
    # training steps only (data, forward, backward, update), not evaluation or checkpoint writes. With
    # `steps` too, the run stops at whichever limit comes first, and the schedule follows the one nearer
    # its end (progress = max(elapsed / budget, step / steps)), so the lr reaches 0 when the run stops.
    budget: str = ""
    # linear warm-up from 0, then linear decay to 0 at the end; None: WARMUP_SHARE of steps, so that
    # changing `steps` alone never leaves a warm-up longer than the run (with a budget: warmup_fraction)
    warmup_steps: int | None = None
    warmup_fraction: float | None = None  # warm-up as a share of the run (steps or budget); None: 0.1
    grad_accum: int = 1  # micro-batches per optimizer step
    # Warm-up-stable-decay (trapezoidal: Xing et al. 2018; WSD, Hu et al. 2024; ModernBERT): the lr stays at
    # its peak after the warm-up and decays to 0 over the last `decay_fraction` of the run (steps or budget).
    # None: over all of the run after the warm-up, BERT's triangle. Hagele et al. 2024 found a decay over
    # the last 20% with `1-sqrt` matching a cosine schedule tuned to the run's length.
    decay_fraction: float | None = None
    decay_shape: str = "linear"  # linear (BERT's) | cosine | 1-sqrt: how the lr falls over the decay
    # A batch-size ramp (Cramming, Geiping & Goldstein 2022; MosaicBERT; ModernBERT): a step takes
    # `batch_ramp_start` of the grad_accum micro-batches at the start, and linearly more up to all of them
    # at `batch_ramp_fraction` of the run (steps or budget), in whole micro-batches (optim.micro_batches).
    # 0: off. The lr schedule is the same either way.
    batch_ramp_fraction: float = 0.0
    batch_ramp_start: float = 0.25

    @property
    def decay(self) -> int:
        """The decay steps in effect (a run by steps): `decay_fraction` of the steps, else all after the
        warm-up."""
        steps = self.max_steps or 0
        return steps - self.warmup if self.decay_fraction is None else round(self.decay_fraction * steps)

    @property
    def max_steps(self) -> int | None:
        """The step limit: `steps`, else DEFAULT_STEPS without a budget; None (no limit) with one."""
        if self.steps is not None:
            return self.steps
        return None if self.budget else DEFAULT_STEPS

    @property
    def budget_seconds(self) -> float | None:
        return parse_duration(self.budget) if self.budget else None

    @property
    def warmup_share(self) -> float:
        return self.warmup_fraction if self.warmup_fraction is not None else WARMUP_SHARE

    @property
    def warmup(self) -> int:
        """The warm-up steps in effect (a run by steps): the explicit `warmup_steps`, else the warm-up share
        of the steps."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        return round(self.warmup_share * (self.max_steps or 0))

    def progress(self, step: int, elapsed: float) -> float:
        """How far a budgeted run is, 0 to 1: the larger of the budget's elapsed share and the steps'."""
        share = elapsed / (self.budget_seconds or math.inf)
        return max(share, step / self.max_steps) if self.max_steps else share

    def finished(self, step: int, elapsed: float) -> bool:
        """Whether a run at `step` after `elapsed` training seconds is over (a limit reached)."""
        steps_done = self.max_steps is not None and step >= self.max_steps
        return steps_done or (self.budget_seconds is not None and elapsed >= self.budget_seconds)


@dataclass
class CheckpointConfig:
    every: int = 500  # steps; a final checkpoint is always written
    every_time: str = ""  # also every this much training time ("10m"; the budget's clock); "" = by steps only
    keep: int = 3  # most recent checkpoints kept
    resume: bool = False  # continue from the newest complete checkpoint in run_dir
    # start from these weights (fresh optimizer, step 0): a run dir (its newest checkpoint), a step-N
    # checkpoint, or a `python -m trainer.import_hf` output; the architecture is the saved one
    init_from: str = ""


@dataclass
class EvalConfig:
    every: int = 500  # steps; 0 = only at the end
    max_batches: int = 50  # 0 = the whole validation split
    # the validation rows masked this many times afresh, scores averaged (masking k from (seed, "eval", k));
    # 0 = the one masking the shard stage wrote
    maskings: int = 4


@dataclass
class LoggingConfig:
    run_dir: str = "runs/bert"  # metrics.jsonl, config.json, checkpoints/
    every: int = 10  # steps between progress lines / metric records


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    seed: int = 0
    device: str = "auto"  # auto (cuda if available) | cpu | cuda
    compile: bool = False  # torch.compile the model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


def _read_toml(path: Path) -> dict[str, Any]:
    data = read_toml(path, "config")
    # a pipeline file keeps the trainer's settings under [train]
    return data["train"] if set(data) == {"train"} else data


def _parse_value(text: str) -> Any:
    """`--set` values are TOML/JSON literals (1e-4, true, "x", [1, 2]); anything else is a plain string."""
    try:  # the records' parser: 10^5 brackets or digits are no literal, not a crash
        return parse_json(text.lower() if text.lower() in ("true", "false") else text, "--set")
    except DataError:
        return text


def _apply(obj: Any, values: dict[str, Any], where: str) -> None:
    hints = get_type_hints(type(obj))
    for key, value in values.items():
        names = {f.name: f for f in fields(obj)}
        if key not in names:
            raise UsageError(f"{where}: unknown config key {key!r} (known: {', '.join(names)})")
        current = getattr(obj, key)
        if is_dataclass(current):
            if not isinstance(value, dict):
                raise UsageError(f"{where}: {key!r} is a section, not a value")
            _apply(current, value, _within(where, key))
        else:
            if current is None:  # an optional field not set yet: check the value against its declared type
                current = next(t for t in get_args(hints[key]) if t is not type(None))()
            setattr(obj, key, _coerce(value, current, _within(where, key)))


def _within(where: str, key: str) -> str:
    """The name of `key` inside `where` for messages: `model.lr`, `--set model.lr`, `train.toml: model.lr`."""
    return key if where == "config" else f"{where} {key}" if where == "--set" else f"{where}.{key}"


def _coerce(value: Any, current: Any, where: str) -> Any:
    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise UsageError(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(current, (int, float)) and not isinstance(value, bool):
        if isinstance(current, int) and isinstance(value, float) and not value.is_integer():
            raise UsageError(f"{where}: expected an integer, got {value!r}")
        if isinstance(value, (int, float)):
            return type(current)(value)
    if isinstance(current, str) and isinstance(value, (str, int, float)):
        return str(value)
    if type(value) is not type(current):
        raise UsageError(f"{where}: expected {type(current).__name__}, got {value!r}")
    return value


def load_config(source: Path | str | dict | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Defaults <- TOML file or dict (a pipeline's [train] table) <- `section.key=value` overrides."""
    config = TrainConfig()
    if isinstance(source, (str, Path)):
        _apply(config, _read_toml(Path(source)), str(source))
    elif source is not None:
        _apply(config, dict(source), "config")
    for item in overrides or []:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r}: expected section.key=value")
        *sections, name = key.strip().split(".")
        nested: dict[str, Any] = {name: _parse_value(text.strip())}
        for section in reversed(sections):
            nested = {section: nested}
        _apply(config, nested, "--set")
    if config.optim.lr is None:  # resolved here, so the run, its checkpoints and --print-config show it
        config.optim.lr = default_lr(config)
    validate(config)
    return config


def default_lr(config: TrainConfig) -> float:
    """The learning rate of the config's preset (PRESET_LR); BERT's for a run from other weights without one
    (their architecture is the saved one)."""
    if config.model.preset is None and config.checkpoint.init_from:
        return BERT_LR
    name = config.model.preset or DEFAULT_PRESET
    return PRESET_LR[preset_size(name)] if name in PRESET_NAMES else BERT_LR  # unknown: validate says so


# sequences in one micro-batch of one rank: far beyond what a device holds (large batches come from ranks and
# grad_accum); it bounds how far a checkpoint's data position can lie (trainer.checkpoint.data_position)
MAX_BATCH_SIZE = 2**20
BATCH_SIZE: RangeCheck = (lambda v: is_whole(v, 1) and v <= MAX_BATCH_SIZE,
                     f"an integer from 1 to {MAX_BATCH_SIZE}")

# The longest run a schedule honours: a year, 8,760 hours (or a billion steps, a year at ~30 steps/s). Far
# beyond any run; past it the warm-up share alone outlasts the machine, so the lr of every step taken would
# sit near 0 (a 10^20-hour budget gave 3e-24 at step 2,000), and a checkpoint interval would never come.
MAX_RUN_SECONDS = 366 * 24 * 3600
MAX_STEPS = 10**9

# The range of every numeric setting, in one place: a TOML file, --set, the flags, a pipeline's [train]
# (load_config -> validate) and a saved model (BertConfig runs check_model: trainer.model_config's
# MODEL_RANGES) are all checked here.
# key -> (test, what the value must be)
RANGES: dict[str, RangeCheck] = {
    "optim.lr": NON_NEGATIVE,
    "optim.beta1": FRACTION,
    "optim.beta2": FRACTION,
    "optim.eps": POSITIVE,
    "optim.weight_decay": NON_NEGATIVE,
    "optim.grad_clip": (lambda v: is_number(v) and v >= 0, "a number >= 0 (0: off)"),
    "schedule.steps": (lambda v: v is None or (is_whole(v, 1) and v <= MAX_STEPS),
                       f"an integer from 1 to {MAX_STEPS:,}"),
    "schedule.warmup_fraction": (lambda v: v is None or is_fraction(v), "in [0, 1)"),
    "schedule.grad_accum": BATCH_SIZE,  # micro-batches: as many as sequences in one, at most
    "schedule.decay_fraction": (lambda v: v is None or (is_number(v) and 0 < v <= 1), "in (0, 1]"),
    "schedule.decay_shape": one_of(tuple(DECAY_SHAPES)),
    "schedule.batch_ramp_fraction": (lambda v: is_number(v) and 0 <= v <= 1, "in [0, 1] (0: no ramp)"),
    "schedule.batch_ramp_start": (lambda v: is_number(v) and 0 < v <= 1, "in (0, 1]"),
    "data.batch_size": BATCH_SIZE,
    "data.num_workers": AT_LEAST_ZERO,
    "data.chunk_rows": AT_LEAST_ONE,
    "data.pad_multiple": AT_LEAST_ONE,
    "data.cache_bytes": AT_LEAST_ONE,
    "data.prefetch_shards": AT_LEAST_ZERO,
    "checkpoint.every": AT_LEAST_ONE,
    "checkpoint.keep": AT_LEAST_ONE,
    "eval.every": (lambda v: is_whole(v, 0), "an integer >= 0 (0: only at the end)"),
    "eval.max_batches": (lambda v: is_whole(v, 0), "an integer >= 0 (0: the whole split)"),
    "eval.maskings": (lambda v: is_whole(v, 0), "an integer >= 0 (0: the shards' own masking)"),
    "logging.every": AT_LEAST_ONE,
}


def validate(config: TrainConfig) -> None:
    """One line naming the first setting out of range (see RANGES), as a UsageError."""
    for key, (ok, must) in RANGES.items():
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if not ok(value):
            raise UsageError(f"config: {key}={value!r} must be {must}")
    durations = {"schedule.budget": config.schedule.budget,
                 "checkpoint.every_time": config.checkpoint.every_time}
    for key, duration in durations.items():
        try:
            if duration and parse_duration(duration) <= 0:
                raise ValueError(f"{duration!r} is no time at all")
            if duration and parse_duration(duration) > MAX_RUN_SECONDS:
                raise ValueError(f"{duration!r} is more than a year (8784h), longer than any run")
        except ValueError as e:
            raise UsageError(f"config: {key}: {e}") from None
    checks = [
        (config.optim.name in ("adamw", "lamb"),
         f"optim.name must be adamw or lamb, not {config.optim.name!r}"),
        *schedule_checks(config.schedule),
        (config.device in ("auto", "cpu", "cuda"),
         f"device must be auto, cpu or cuda, not {config.device!r}"),
    ]
    for ok, message in checks:
        if not ok:
            raise UsageError(f"config: {message}")
    try:
        # the explicit values (0 included)
        check_model({f.name: getattr(config.model, f.name) for f in fields(config.model)})
        config.model.bert_config(vocab_size=8)  # as resolved with the preset
    except ValueError as e:
        raise UsageError(f"config: {e}") from None


def schedule_checks(schedule) -> list[tuple[bool, str]]:
    """(holds, what to say when it does not) for the settings of `schedule` that constrain each other."""
    return [
        (
            not (schedule.budget and schedule.warmup_steps is not None),
            "schedule.warmup_steps counts steps, and a budgeted run's schedule follows time: set "
            "schedule.warmup_fraction instead",
        ),
        (
            schedule.warmup_steps is None or schedule.warmup_fraction is None,
            "schedule.warmup_steps and schedule.warmup_fraction both set: set one",
        ),
        (
            schedule.budget or 0 <= schedule.warmup <= (schedule.max_steps or 0),
            f"schedule.warmup_steps={schedule.warmup} must be in [0, steps={schedule.max_steps}]",
        ),
        (
            schedule.decay_fraction is None
            or (schedule.warmup_share + schedule.decay_fraction <= 1 if schedule.budget
                else schedule.warmup + schedule.decay <= (schedule.max_steps or 0)),
            f"schedule.warmup_fraction={schedule.warmup_share} + decay_fraction="
            f"{schedule.decay_fraction} must be at most 1 (the whole budget)" if schedule.budget else
            f"schedule: a warm-up of {schedule.warmup} steps and a decay of {schedule.decay} "
            f"(decay_fraction={schedule.decay_fraction}) must fit in steps={schedule.max_steps}",
        ),
        (
            not schedule.batch_ramp_fraction or schedule.grad_accum * schedule.batch_ramp_start >= 1,
            f"schedule.batch_ramp_start={schedule.batch_ramp_start} of "
            f"grad_accum={schedule.grad_accum} is less than one micro-batch: a batch ramp counts whole "
            "micro-batches (raise schedule.grad_accum, and lower data.batch_size to keep the batch)",
        ),
    ]
