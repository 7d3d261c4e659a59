"""Checkpoints: RUN_DIR/checkpoints/step-NNNNNNN/, with no pickle in them.

    weights.safetensors   the model's state dict (no `_orig_mod.` / `module.` prefixes); the file export reads
    trainer.safetensors   every other tensor: the optimizer's state (`optimizer.state.I.NAME`) and each rank's
                          RNG states (`rng.R.cpu`, `rng.R.cuda`)
    trainer.json          the step, each rank's data position, the optimizer's param groups and other
                          state, the schedule's state and the last metrics; a tensor is {"tensor": NAME}
    config.json           {"format": 2, "train": resolved TrainConfig, "model": BertConfig, "vocab": the
                          shards' {sha256, size}, "shards": what a resume must find again, "files": {NAME:
                          {size, sha256}} of the three files above}

Nothing in a checkpoint can run code when it is read: tensors are raw bytes (safetensors, whose header is
checked as a record: `corpusprep.engine.records`), everything else is JSON checked against its schema
(`checkpoint_config`, `trainer_state`), and every file is compared with its sha256 in config.json before use.
A checkpoint of the earlier format (`*.pt`: pickle, which can run code when loaded, even restricted to
weights) is refused with one line. A checkpoint is written into a hidden temporary directory and renamed
into place (`engine.files.atomic_dir`), so a directory under a final name is always complete; a killed write
leaves only a temp dir, removed on the next start; a failed one (a full disk) removes it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import torch

from corpusprep.engine import faults, records
from corpusprep.engine.artifact import sha256_file
from corpusprep.engine.files import atomic_dir, remove_stale_temps
from corpusprep.errors import DataError, UsageError, os_error_in
from trainer.config import WARMUP_SHARE, ModelConfig
from trainer.model import BertConfig, BertForPreTraining

STEP_DIR = re.compile(r"^step-(\d{7,})$")
FORMAT = 2  # 1: the pickled *.pt files, refused
WEIGHTS, STATE_TENSORS = records.CHECKPOINT_WEIGHTS, records.CHECKPOINT_TENSORS
STATE, CONFIG = records.CHECKPOINT_STATE, records.CHECKPOINT_CONFIG
FILES = (WEIGHTS, STATE_TENSORS, STATE, CONFIG)  # what `save` writes
PICKLED = records.PICKLED_CHECKPOINT  # the earlier format's files


def checkpoint_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints, oldest first. A checkpoint of the earlier, pickled format is refused."""
    root = checkpoint_dir(run_dir)
    if not root.is_dir() or root.is_symlink():
        return []
    steps = [(int(m[1]), p) for p in root.iterdir() if (m := STEP_DIR.match(p.name)) and not p.is_symlink()]
    for _, path in steps:
        refuse_pickled(path)
    return sorted((step, path) for step, path in steps if complete(path))


def refuse_pickled(path: Path) -> None:
    """One line for a checkpoint of the earlier format, whose pickled files corpusprep no longer loads."""
    if found := [name for name in PICKLED if (path / name).exists()]:
        raise DataError(
            f"{path / found[0]}: a checkpoint in the earlier pickled format, which corpusprep no longer "
            "loads (unpickling a file can run code); train again, or convert it with the corpusprep release "
            "that wrote it (`python -m trainer.export` it there, then `python -m trainer.import_hf` it here)"
        )


def complete(path: Path) -> bool:
    """A checkpoint directory holding every file `save` writes (a lost file makes it no checkpoint: the
    run resumes from the one before, and rotation never deletes a directory someone else made)."""
    return path.is_dir() and all((path / name).is_file() and (path / name).stat().st_size for name in FILES)


# What must not change when a run continues from its checkpoint (the rest: steps, cadences, paths of logs)
# (a batch size change continues at the same row: positions are kept in rows; `data.shards` is checked by
# content, not path, `trainer.train.check_resume_shards`: a copy elsewhere is the same data; the model as
# resolved, by `Trainer.load_state_dict`)
RESUME_KEYS = (
    "optim.",
    "seed",
    "data.chunk_rows",
    "data.pad_multiple",
    "data.dynamic_masking",
    "data.num_workers",
    "schedule.warmup_steps",
    "schedule.warmup_fraction",
    "schedule.grad_accum",
    "checkpoint.init_from",
)


def resume_conflicts(saved: dict, current: dict) -> list[str]:
    """Settings of `current` (TrainConfig as a dict) that differ from those a checkpoint was saved with."""

    def flat(d: dict, prefix: str = "") -> dict:
        out = {}
        for key, value in d.items():
            out |= flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
        return out

    before, after = flat(saved), flat(current)

    def norm(key: str, value: Any, config: dict) -> Any:
        if key == "checkpoint.init_from" and value:
            return str(Path(str(value)).resolve())  # saved resolved (`config_record`); older runs as typed
        if key == "schedule.warmup_steps" and value is None:  # the default, resolved from that run's steps
            steps = config.get("schedule.steps")  # None: a budgeted run
            return round(WARMUP_SHARE * steps) if isinstance(steps, (int, float)) else None
        return value

    def shown(key: str, config: dict) -> str:
        value, resolved = config.get(key), norm(key, config.get(key), config)
        return f"{resolved!r} (the default)" if value is None and resolved is not None else repr(value)

    keys = sorted(k for k in set(before) | set(after) if k.startswith(RESUME_KEYS))
    return [
        f"{k}: {shown(k, before)} -> {shown(k, after)}"
        for k in keys
        if norm(k, before.get(k), before) != norm(k, after.get(k), after)
    ]


def latest(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1][1] if found else None


def remove_partial(run_dir: Path) -> int:
    """Delete what killed checkpoint writes left in a run dir (`checkpoints/.step-N.tmp-PID`), no more."""
    return remove_stale_temps(run_dir, ["checkpoints/step-*"]) if Path(run_dir).is_dir() else 0


# ---------------------------------------------------------------- writing


def _write_tensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """safetensors, fsynced; a failure (torch and safetensors report a full disk in their own ways) names
    the file."""
    from safetensors.torch import save_file

    try:
        save_file({k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}, str(path),
                  metadata={"format": "pt"})  # fmt: skip
        os.chmod(path, _new_file_mode())  # safetensors makes its files 0600; every other has the umask's
        with open(path, "rb") as f:
            os.fsync(f.fileno())
    except Exception as error:
        cause = os_error_in(error)
        if cause is None or cause.filename is not None:
            raise
        raise OSError(cause.errno, cause.strerror, str(path)) from error


def _new_file_mode() -> int:
    """The mode a file created now gets: 0666 less the umask (read from /proc, which leaves it alone)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _file_record(directory: Path, names: list[str]) -> dict[str, dict]:
    return {n: {"size": (directory / n).stat().st_size, "sha256": sha256_file(directory / n)} for n in names}


def _write_config(directory: Path, record: dict, names: list[str]) -> None:
    record = {**record, "format": FORMAT, "files": _file_record(directory, names)}
    (directory / CONFIG).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def save_model(directory: Path, state: dict[str, torch.Tensor], record: dict) -> None:
    """A model checkpoint into `directory` (existing, being filled: a temporary one): `weights.safetensors`
    and `config.json` (`record`: at least {"model": BertConfig fields}, plus the file's size and sha256).
    What `trainer.import_hf` writes; `save` writes a training checkpoint the same way."""
    _write_tensors(state, directory / WEIGHTS)
    _write_config(directory, record, [WEIGHTS])


def encode_state(value: Any, tensors: dict[str, torch.Tensor], name: str) -> Any:
    """`value` (a state dict: dicts, lists, tuples, numbers, strings, tensors) as JSON; each tensor goes into
    `tensors` under `name` (its path) and is written {"tensor": name}."""
    if isinstance(value, torch.Tensor):
        tensors[name] = value
        return {"tensor": name}
    if isinstance(value, dict):
        return {str(k): encode_state(v, tensors, f"{name}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_state(v, tensors, f"{name}.{i}") for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{name}: a {type(value).__name__} has no place in a checkpoint")


def save(run_dir: Path, step: int, states: dict[str, Any], config: dict, keep: int) -> Path:
    """Write a training checkpoint (`states`: Trainer.state_dict()) atomically as a directory; keep the
    newest `keep`. A full disk (or any failure) removes the partial directory: the previous checkpoints
    stay usable."""
    final = checkpoint_dir(run_dir) / f"step-{step:07d}"
    tensors: dict[str, torch.Tensor] = {}
    trainer = states["trainer"]
    state = {
        "format": FORMAT,
        **{k: encode_state(v, tensors, k) for k, v in trainer.items()},
        "optimizer": encode_state(states["optimizer"], tensors, "optimizer"),
        "scheduler": encode_state(states["scheduler"], tensors, "scheduler"),
    }
    with atomic_dir(final) as tmp:
        _write_tensors(states["model"], tmp / WEIGHTS)
        faults.reached("checkpoint_file")  # a kill here (tests) leaves a half-written checkpoint directory
        _write_tensors(tensors, tmp / STATE_TENSORS)
        faults.reached("checkpoint_file")
        (tmp / STATE).write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
        faults.reached("checkpoint_file")
        _write_config(tmp, config, [WEIGHTS, STATE_TENSORS, STATE])
        faults.reached("checkpoint_file")
    for _, old in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


# ---------------------------------------------------------------- reading


def read_config(path: Path) -> dict:
    """A checkpoint's config.json (records kind "checkpoint_config"); one line naming the file and the field
    when it is damaged."""
    refuse_pickled(path)
    try:
        return records.load_record(path / CONFIG, "checkpoint_config")
    except DataError as error:
        raise DataError(f"{error}; delete {path} to resume from the checkpoint before it") from None


def verify(path: Path, name: str, config: dict) -> Path:
    """`path / name` after checking it against its size and sha256 in config.json (a file changed, swapped
    or cut short since it was written is one line naming it)."""
    entry = config.get("files", {}).get(name)
    file = path / name
    if entry is None:
        raise DataError(f"{path / CONFIG}: files: no record of {name}; delete {path} (not a checkpoint "
                        "corpusprep wrote)")  # fmt: skip
    if not file.is_file() or file.stat().st_size != entry["size"] or sha256_file(file) != entry["sha256"]:
        raise DataError(f"{file}: missing, or not the file {CONFIG} records (size, sha256): changed or cut "
                        "short since it was written")  # fmt: skip
    return file


def load_tensors(file: Path, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """Tensors of a safetensors file whose header is checked first (records.safetensors_header)."""
    from safetensors.torch import load_file

    records.safetensors_header(file)
    try:
        return load_file(str(file), device=str(device))
    except Exception as error:  # safetensors' own errors: one line
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise DataError(f"{file}: cannot load ({first})") from None


def load_weights(path: Path, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """A checkpoint's model weights, checked against config.json."""
    return load_tensors(verify(path, WEIGHTS, read_config(path)), device)


def load_state(path: Path, device: str | torch.device = "cpu") -> dict[str, Any]:
    """A training checkpoint's state: {"step", "positions", "rng", "last_metrics", "optimizer", "scheduler"}
    with every tensor in place, each file checked against config.json."""
    config = read_config(path)
    state = read_state(path, config)
    tensors = load_tensors(verify(path, STATE_TENSORS, config), device)
    state = decode_state(state, tensors, path / STATE)
    # JSON keys are strings; the optimizer's state is keyed by each parameter's index
    state["optimizer"]["state"] = {int(k): v for k, v in state["optimizer"]["state"].items()}
    return state


def read_state(path: Path, config: dict | None = None) -> dict:
    """trainer.json (records kind "trainer_state", checked against config.json), tensors still named."""
    config = config if config is not None else read_config(path)
    state = records.load_record(verify(path, STATE, config), "trainer_state")
    match = STEP_DIR.match(path.name)
    if match and state["step"] != int(match.group(1)):
        raise DataError(f"{path / STATE}: step: {state['step']}, not the step of {path.name}")
    return state


def decode_state(value: Any, tensors: dict[str, torch.Tensor], where: Path, at: str = "") -> Any:
    """encode_state's inverse: every {"tensor": NAME} replaced by its tensor, which must exist."""
    if isinstance(value, dict):
        if set(value) == {"tensor"}:
            if value["tensor"] not in tensors:
                raise DataError(f"{where}: {at}: names tensor {value['tensor']!r}, which "
                                f"{STATE_TENSORS} does not hold")  # fmt: skip
            return tensors[value["tensor"]]
        return {k: decode_state(v, tensors, where, f"{at}.{k}" if at else k) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_state(v, tensors, where, f"{at}[{i}]") for i, v in enumerate(value)]
    return value


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


def check_like(saved: dict, live: dict, where: str, params: list[torch.Tensor] | None = None) -> None:
    """A saved optimizer (`params`: its parameters in order) or schedule state shaped like this run's own
    `live` one: the same keys with the same kinds of values, param groups over the same parameters, and each
    parameter's state tensors of its shape (a `step` of one element), so that load_state_dict takes nothing
    that would fail, or train wrongly, later. One DataError line naming the field."""

    def same(a: Any, b: Any, at: str) -> None:
        if _kind(a) != _kind(b):
            raise DataError(f"{where}.{at}: {_kind(a)}, not {_kind(b)} as this run's")

    if params is None:
        if set(saved) != set(live):
            raise DataError(f"{where}: keys {sorted(saved)}, not {sorted(live)}")
        for key in live:
            same(saved[key], live[key], key)
        return
    groups, live_groups = saved["param_groups"], live["param_groups"]
    if len(groups) != len(live_groups):
        raise DataError(f"{where}.param_groups: {len(groups)} groups, not {len(live_groups)}")
    for g, (group, own) in enumerate(zip(groups, live_groups, strict=True)):
        if set(group) != set(own) or group["params"] != own["params"]:
            raise DataError(f"{where}.param_groups[{g}]: not the parameters and settings of this run's")
        for key in own:
            same(group[key], own[key], f"param_groups[{g}].{key}")
    for index, entry in saved["state"].items():
        if not (isinstance(index, int) and 0 <= index < len(params)):
            raise DataError(f"{where}.state: {index!r}: no parameter of this model")
        for key, value in entry.items():
            at = f"{where}.state.{index}.{key}"
            if not isinstance(value, torch.Tensor):
                same(value, 0, f"state.{index}.{key}")
            elif key == "step" and value.numel() != 1:
                raise DataError(f"{at}: {value.numel()} elements, not 1")
            elif key != "step" and (value.shape != params[index].shape or not value.is_floating_point()):
                raise DataError(f"{at}: {value.dtype} {tuple(value.shape)}, not the parameter's "
                                f"{tuple(params[index].shape)}")  # fmt: skip


def load(path: Path, name: str, map_location: str | torch.device = "cpu") -> Any:
    """One part of a training checkpoint: "model" (the weights), "optimizer", "scheduler" or "trainer"
    (step, positions, RNG states, last metrics)."""
    if name == "model":
        return load_weights(path, map_location)
    state = load_state(path, map_location)
    if name in ("optimizer", "scheduler"):
        return state[name]
    return {k: v for k, v in state.items() if k not in ("optimizer", "scheduler")}


def config_record(train_config: Any, bert_config: Any, vocab: dict | None = None) -> dict:
    record = {"train": asdict(train_config), "model": asdict(bert_config)}
    data = record["train"]["data"]
    if data.get("shards"):  # resolved: a resume from another working directory finds the same shards
        data["shards"] = str(Path(data["shards"]).resolve())
    if vocab:  # as import_hf writes it: checkpoint.init_from checks it against the shards' vocab
        record["vocab"] = {"sha256": vocab.get("sha256"), "size": vocab.get("size")}
    return record


def init_weights(
    source: str | Path,
    model: ModelConfig,
    vocab_size: int,
    vocab_sha256: str | None,
    where: Path,
    objective: str = "nsp",
) -> tuple[BertConfig, dict[str, torch.Tensor], Path]:
    """checkpoint.init_from: (architecture, weights, checkpoint dir) to start a run from.

    `source`: a run dir (its newest checkpoint), a step-N checkpoint or a `trainer.import_hf` output. The
    architecture is the saved one; `model` may repeat it but not contradict it, and its dropout rates
    (training settings) replace the saved ones. The vocab must be the shards' (`where`: their manifest):
    same size, and the same sha256 when the checkpoint records one. The sentence head follows `objective`
    (the shards'): dropped for `none`; kept from a model trained on the same objective, else fresh.
    """
    path = find_checkpoint(Path(source))
    saved_model, state, saved = load_checkpoint(path)
    if conflicts := model.conflicts(saved_model):
        raise UsageError(f"{path}: init_from a model other than the requested one: {', '.join(conflicts)}")
    if saved_model.vocab_size != vocab_size:
        raise UsageError(f"{path}: a model of {saved_model.vocab_size} tokens; {where}: {vocab_size} tokens")
    saved_sha = saved.get("vocab", {}).get("sha256")
    if saved_sha and vocab_sha256 and saved_sha != vocab_sha256:
        raise UsageError(
            f"{path / 'config.json'}: vocab sha256 {saved_sha[:12]}... but {where}: {vocab_sha256[:12]}... "
            "(build the pairs and shards with the model's vocab)"
        )
    check_state(state, saved_model, path / WEIGHTS)  # every weight, right shapes: nothing left random
    bert = replace(saved_model, dropout=model.dropout, attention_dropout=model.attention_dropout,
                   objective=objective)  # fmt: skip
    if saved_model.objective != objective and bert.sentence_head:  # another task's head: ours starts fresh
        state = {k: v for k, v in state.items() if not k.startswith(SENTENCE_HEAD)}
    return bert, state, path


SENTENCE_HEAD = ("pooler.", "nsp_head.")  # the weights only objectives with a sentence task have


# ---------------------------------------------------------------- reading a checkpoint (export, init_from)

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


def bert_config(saved: dict, where: Path) -> BertConfig:
    """BertConfig from a checkpoint's config.json "model" entry; an unknown field is an error, not ignored."""
    known = {f.name for f in fields(BertConfig)}
    if unknown := set(saved) - known:
        raise UsageError(f"{where}: unknown model field(s) {', '.join(sorted(unknown))} (newer trainer?)")
    try:
        config = BertConfig(**saved)
    except (TypeError, ValueError) as e:  # a value out of range (trainer.config.check_model), a wrong type
        raise DataError(f"{where}: {e}") from None
    return config  # its sizes checked as it was built: in range, and a model this machine holds (check_fits)


def find_checkpoint(path: Path) -> Path:
    """A checkpoint directory (weights.safetensors + config.json), or a run directory: its newest
    checkpoint; or a pipeline run directory holding one trainer run (train/, or PHASE/train/): that run's
    newest checkpoint. A checkpoint of the earlier, pickled format is refused (`refuse_pickled`)."""
    refuse_pickled(path)
    if not (path / WEIGHTS).exists() and not (path / "checkpoints").is_dir():
        found = [*path.glob("*/checkpoints"), *path.glob("*/*/checkpoints")]
        runs = sorted(p.parent for p in found if p.is_dir())
        if len(runs) > 1:
            names = ", ".join(str(r) for r in runs)
            raise UsageError(f"{path}: holds several trainer runs; export one of them: {names}")
        if runs:  # a pipeline run directory: its one training stage
            path = runs[0]
    if (path / "checkpoints").is_dir() and not (path / WEIGHTS).exists():
        found = latest(path)
        if found is None:
            raise UsageError(f"{path}: run directory without a complete checkpoint")
        path = found
    refuse_pickled(path)
    for name in (WEIGHTS, CONFIG):
        if not (path / name).is_file():
            raise UsageError(f"{path}: no {name} (not a trainer checkpoint directory)")
    return path


def load_checkpoint(path: Path) -> tuple[BertConfig, dict[str, torch.Tensor], dict]:
    """(model config, our state dict without wrapper prefixes, the saved config.json)."""
    path = find_checkpoint(Path(path))
    saved = read_config(path)
    config = bert_config(saved["model"], path / CONFIG)
    return config, strip_wrappers(load_weights(path)), saved


WEIGHT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)  # export.FLOAT_DTYPES


def check_state(state: dict[str, torch.Tensor], config: BertConfig, where: Path) -> None:
    """Every key and shape our model has, no more: a checkpoint that would load with random weights fails;
    every weight a float our model computes with, and finite (a diverged run's weights are no model)."""
    with torch.device("meta"):  # shapes only, no memory, no init
        expected = {k: v.shape for k, v in BertForPreTraining(config).state_dict().items()}
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = [k for k in expected if k in state and state[k].shape != expected[k]]
    not_float = [k for k in expected if k in state and state[k].dtype not in WEIGHT_DTYPES]  # float8: no
    nonfinite = [] if not_float else [k for k in expected if k in state and not state[k].isfinite().all()]
    for what, keys in (("missing", missing), ("unexpected", unexpected), ("wrong shape of", wrong),
                       ("not float16, bfloat16, float32 or float64:", not_float),
                       ("NaN or infinite values (diverged weights) in", nonfinite)):  # fmt: skip
        if keys:
            raise DataError(f"{where}: {what} {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}")
