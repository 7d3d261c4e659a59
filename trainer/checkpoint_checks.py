"""What a checkpoint's states must be before a run uses them, checked against what this run holds or its
settings build. A checkpoint is data from disk: it may be damaged, edited or from another run, and a record
can pass its schema (trainer.schemas) and still be no state a run writes: 10^17 examples read in 2 steps,
betas of 1, a negative step, a config.json whose model is not the weights'. So, by meaning:

    weights     every weight a model of its config.json has, with its shape, no more (`check_shapes`, also
                on a safetensors header before a byte is loaded: `check_weights_file`); floats, finite
                (`check_state`); names without the `_orig_mod.` / `module.` prefixes (`strip_wrappers`)
    optimizer   this run's param groups and hyperparameters, finite moments of each parameter's shape
                (`optimizer_state`)
    schedule    this run's keys, peak learning rates and the checkpoint's step (`check_schedule`)
    data        a place in the global order the run could have reached (`data_position`)

trainer.checkpoint reads the files (each against its sha256) and calls these; `Trainer.load_state_dict`
and `corpusprep validate` (`checkpoint.check_checkpoint`) make the same checks."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from corpusprep.engine.safetensors_file import safetensors_header
from corpusprep.errors import DataError
from trainer.checkpoint_legacy import converted_position
from trainer.config import MAX_BATCH_SIZE
from trainer.data import Position
from trainer.model import BertConfig, BertForPreTraining
from trainer.optim import STATE_KEYS

WRAPPER_PREFIXES = ("_orig_mod.", "module.")  # torch.compile, DDP


def strip_wrappers(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Drop `_orig_mod.` / `module.` prefixes (torch.compile, DDP, both nested), whatever saved them."""

    def clean(key: str) -> str:
        while key.startswith(WRAPPER_PREFIXES):
            key = key.split(".", 1)[1]
        return key

    cleaned = {clean(k): v for k, v in state.items()}
    if len(cleaned) != len(state):
        raise DataError("state dict holds the same key with and without a wrapper prefix")
    return cleaned


def weight_shapes(config: BertConfig) -> Iterator[tuple[str, tuple[int, ...]]]:
    """The name and shape of every weight of a model of `config`, in state-dict order, lazily, from a meta
    model of ONE layer (the layers repeat it): no model of `num_layers` is built, so a config.json claiming
    10^10 layers costs nothing until a file holding them is compared (`check_shapes` stops at the first
    weight the file lacks)."""
    with torch.device("meta"):  # shapes only, no memory, no init
        one = BertForPreTraining(replace(config, num_layers=1)).state_dict()
    one = {k: tuple(v.shape) for k, v in one.items()}
    layer = {k.removeprefix("layers.0."): v for k, v in one.items() if k.startswith("layers.0.")}
    listed = False
    for name, shape in one.items():
        if not name.startswith("layers."):
            yield name, shape
        elif not listed:
            listed = True
            for i in range(config.num_layers):
                yield from ((f"layers.{i}.{k}", v) for k, v in layer.items())


def check_shapes(shapes: dict[str, tuple[int, ...]], config: BertConfig, where: Path) -> None:
    """The weights `shapes` names ({name: shape}: a loaded state dict's, or a safetensors header's, read
    without loading) are every weight of a model of `config` with its shape, no more: a checkpoint whose
    config.json does not describe its weights, or that would leave weights random, is one line naming the
    first tensor that differs."""
    seen = 0
    for name, shape in weight_shapes(config):
        if name not in shapes:
            raise DataError(f"{where}: missing {name} (a weight of the model config.json describes)")
        if tuple(shapes[name]) != shape:
            raise DataError(f"{where}: wrong shape of {name}: {list(shapes[name])}, not {list(shape)} as the "
                            "model config.json describes")
        seen += 1
    if seen != len(shapes):
        expected = {name for name, _ in weight_shapes(config)}
        extra = sorted(set(shapes) - expected)
        more = " ..." if len(extra) > 5 else ""
        raise DataError(f"{where}: unexpected {', '.join(extra[:5])}{more} (not a weight of the model "
                        "config.json describes)")


WEIGHT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)  # safetensors_file.FLOAT_DTYPES


def check_state(state: dict[str, torch.Tensor], config: BertConfig, where: Path) -> None:
    """Every key and shape our model has, no more (a checkpoint that would load with random weights, or
    wrong ones, fails); every weight a float our model computes with (float8: no), and finite (a diverged
    run's weights are no model)."""
    check_shapes({k: tuple(v.shape) for k, v in state.items()}, config, where)
    if not_float := [k for k, v in state.items() if v.dtype not in WEIGHT_DTYPES]:
        raise DataError(f"{where}: not float16, bfloat16, float32 or float64: {', '.join(not_float[:5])}")
    if nonfinite := [k for k, v in state.items() if not v.isfinite().all()]:
        raise DataError(f"{where}: NaN or infinite values (diverged weights) in {', '.join(nonfinite[:5])}")


def check_weights_file(file: Path, config: BertConfig) -> None:
    """`check_shapes` on a safetensors file's header, before a byte of the weights is loaded."""
    header = safetensors_header(file)
    check_shapes(strip_wrappers({k: shape for k, (_, shape) in header.items()}), config, file)


IMPLEMENTATION = ("foreach", "fused", "capturable", "differentiable")  # how the update runs: this machine's


SCHEDULED = ("lr", "initial_lr")  # what the schedule sets as training goes: the checkpoint's


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def _count(value: Any) -> bool:
    """A finite number >= 0 (a JSON number, or a one-element floating point tensor)."""
    if isinstance(value, torch.Tensor):
        ok = value.numel() == 1 and value.is_floating_point()
        return ok and bool((value.isfinite() & (value >= 0)).all())
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0


def optimizer_state(saved: dict, optimizer: torch.optim.Optimizer, where: str) -> dict:
    """The optimizer state to load from a checkpoint's `saved` one, checked against this run's `optimizer`
    (built from the validated config): the same param groups over the same parameters, their
    hyperparameters (betas, eps, weight_decay, amsgrad, maximize, ...) this run's (else one line naming the
    field: the checkpoint contradicts the settings it was saved with, which `resume_conflicts` compared with
    this run's), the learning rate the schedule set taken from it, a finite one; how the update runs
    (foreach, fused, capturable, differentiable) this machine's, so a GPU's checkpoint resumes on a CPU. Each
    parameter's state: exactly STATE_KEYS, `step` a finite count, the moments finite tensors of the
    parameter's dtype and shape (the second one >= 0)."""
    live = optimizer.state_dict()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    groups, live_groups = saved["param_groups"], live["param_groups"]
    if len(groups) != len(live_groups):
        raise DataError(f"{where}.param_groups: {len(groups)} groups, not {len(live_groups)}")
    loaded = []
    for g, (group, own) in enumerate(zip(groups, live_groups, strict=True)):
        if set(group) != set(own) or group["params"] != own["params"]:
            raise DataError(f"{where}.param_groups[{g}]: not the parameters and settings of this run's")
        for key in own.keys() - {"params", *IMPLEMENTATION}:
            at, value = f"{where}.param_groups[{g}].{key}", group[key]
            if key in SCHEDULED and not _count(value):
                raise DataError(f"{at}: {value!r}, not a finite learning rate >= 0")
            if key not in SCHEDULED and _plain(value) != _plain(own[key]):
                raise DataError(f"{at}: {value!r}, not {_plain(own[key])!r} as this run's settings make it")
        loaded.append(own | {k: group[k] for k in SCHEDULED if k in own})
    for index, entry in saved["state"].items():
        if not (isinstance(index, int) and 0 <= index < len(params)):
            raise DataError(f"{where}.state: {index!r}: no parameter of this model")
        if set(entry) != set(STATE_KEYS):
            raise DataError(f"{where}.state.{index}: keys {sorted(entry)}, not {sorted(STATE_KEYS)}")
        param = params[index]
        for key, value in entry.items():
            at = f"{where}.state.{index}.{key}"
            if key == "step":
                if not _count(value):
                    raise DataError(f"{at}: {_shown(value)}, not a finite count >= 0")
            elif not isinstance(value, torch.Tensor) or (value.dtype, value.shape) != (param.dtype,
                                                                                        param.shape):
                raise DataError(f"{at}: {_shown(value)}, not the parameter's {param.dtype} "
                                f"{tuple(param.shape)}")
            elif not value.isfinite().all() or (key == "exp_avg_sq" and (value < 0).any()):
                what = "not finite or negative" if key == "exp_avg_sq" else "not finite"
                raise DataError(f"{at}: holds values {what}")
    return {"state": saved["state"], "param_groups": loaded}


def _shown(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        held = f" ({value.flatten()[0].item()!r})" if value.numel() == 1 else ""
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}{held}"
    return repr(value)


def check_schedule(saved: dict, scheduler: Any, step: int, where: str) -> None:
    """A checkpoint's schedule state shaped like this run's: the same keys with the same kinds of values,
    the peak learning rates this run's settings make (`base_lrs`), at the checkpoint's step."""
    live = scheduler.state_dict()
    if set(saved) != set(live):
        raise DataError(f"{where}: keys {sorted(saved)}, not {sorted(live)}")
    for key, own in live.items():
        if _kind(saved[key]) != _kind(own):
            raise DataError(f"{where}.{key}: {_kind(saved[key])}, not {_kind(own)} as this run's")
    if _plain(saved["base_lrs"]) != _plain(live["base_lrs"]):
        raise DataError(f"{where}.base_lrs: {saved['base_lrs']}, not {live['base_lrs']} as this run's "
                        "settings make them")
    if saved["last_epoch"] != step:
        raise DataError(f"{where}.last_epoch: {saved['last_epoch']!r}, not the checkpoint's step {step}")
    if bad := [v for v in _plain(saved["_last_lr"]) if not _count(v)]:
        raise DataError(f"{where}._last_lr: {bad[0]!r}, not a finite learning rate >= 0")


def _kind(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return "a tensor"
    if value is None or isinstance(value, bool):
        return "a flag"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return ("a list of", tuple(_kind(v) for v in value))
    return "an object" if isinstance(value, dict) else type(value).__name__


MAX_RANKS = 2**16  # as many RNG states as trainer.json holds (trainer.schemas.TRAINER_STATE)


def data_position(state: dict, grad_accum: int, where: Path, epoch_examples: int | None = None) -> Position:
    """The place in the global order of examples a checkpoint's run had reached (`trainer.data.Position`),
    one the run could have reached: within its epoch (of `epoch_examples`, when the shards are known), and
    no further than its steps of micro-batches of at most MAX_BATCH_SIZE examples on MAX_RANKS ranks could
    go (a position of 10^17 examples is refused, not taken). A checkpoint of an earlier trainer kept a
    position per rank and DataLoader worker in rows: one stream (one rank, at most one worker) read the
    global order itself and converts exactly; several streams read other orders and are refused."""
    if "data" not in state:
        return converted_position(state, grad_accum, where, epoch_examples)
    epoch, examples = state["data"]["epoch"], state["data"]["examples"]
    at = f"{where}: data: epoch {epoch}, examples {examples}"
    if epoch_examples is not None and examples >= epoch_examples:
        raise DataError(f"{at}: not within an epoch of {epoch_examples} examples")
    most = state["step"] * grad_accum * MAX_BATCH_SIZE * MAX_RANKS
    # the fewest examples this position means: the epochs before it hold more than `examples` each
    if epoch * (examples + 1) + examples > most:
        raise DataError(f"{at}: more than {state['step']} steps x {grad_accum} micro-batches of at most "
                        f"{MAX_BATCH_SIZE} examples on {MAX_RANKS} ranks consume")
    return Position(epoch, examples)
