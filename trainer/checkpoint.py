"""Checkpoints: RUN_DIR/checkpoints/step-NNNNNNN/, with no pickle in them.

    weights.safetensors   the model's state dict (no `_orig_mod.` / `module.` prefixes); the file export reads
    trainer.safetensors   every other tensor: the optimizer's state (`optimizer.state.I.NAME`) and each rank's
                          RNG states (`rng.R.cpu`, `rng.R.cuda`)
    trainer.json          the step, the data position (epoch, examples consumed: a place in the global order,
                          the same for every rank), the optimizer's param groups and other state, the
                          schedule's state and the last metrics; a tensor is {"tensor": NAME}
    config.json           {"format": 2, "train": resolved TrainConfig, "model": BertConfig, "vocab": the
                          shards' {sha256, size}, "shards": what a resume must find again, "files": {NAME:
                          {size, sha256}} of the three files above}

Nothing in a checkpoint can run code when it is read: tensors are raw bytes (safetensors, whose header is
checked as a record: `corpusprep.engine.safetensors_file`), everything else is JSON checked against its schema
(`checkpoint_config`, `trainer_state`), and every file is compared with its sha256 in config.json before use.
A checkpoint of the earlier format (`*.pt`: pickle, which can run code when loaded, even restricted to
weights) is refused with one line. A checkpoint is written into a hidden temporary directory and renamed
into place (`engine.files.atomic_dir`), so a directory under a final name is always complete; a killed write
leaves only a temp dir, removed on the next start; a failed one (a full disk) removes it.

This module is the format: writing (`save`, `save_model`), finding (`latest`, `find_checkpoint`), reading
each file against its sha256 (`read_config`, `load_weights`, `load_state`) and every check at once for
`corpusprep validate` (`check_checkpoint`). What the states must be: trainer.checkpoint_checks. Earlier
formats: trainer.checkpoint_legacy. Where a run starts from (resume, init_from): trainer.resume.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any

import torch

from corpusprep.engine import faults, outputs, records, storage
from corpusprep.engine.files import atomic_dir, remove_stale_temps
from corpusprep.engine.manifest import sha256_file
from corpusprep.engine.safetensors_file import safetensors_header
from corpusprep.errors import DataError, UsageError, os_error_in
from trainer.checkpoint_checks import (
    check_schedule,
    check_weights_file,
    data_position,
    optimizer_state,
    strip_wrappers,
)
from trainer.checkpoint_legacy import refuse_pickled
from trainer.config import TrainConfig, load_config
from trainer.model import BertConfig, BertForPreTraining
from trainer.optim import build_optimizer, build_scheduler

STEP_DIR = re.compile(r"^step-(\d{7,})$")
FORMAT = 2  # 1: the pickled *.pt files, refused
WEIGHTS, STATE_TENSORS = outputs.CHECKPOINT_WEIGHTS, outputs.CHECKPOINT_TENSORS
STATE, CONFIG = outputs.CHECKPOINT_STATE, outputs.CHECKPOINT_CONFIG
FILES = (WEIGHTS, STATE_TENSORS, STATE, CONFIG)  # what `save` writes


def checkpoint_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints, oldest first. A checkpoint of the earlier, pickled format is refused."""
    root = checkpoint_dir(run_dir)
    if not storage.is_dir(root) or root.is_symlink():
        return []
    steps = [(int(m[1]), p) for p in storage.list_dir(root)
             if (m := STEP_DIR.match(p.name)) and not p.is_symlink()]
    for _, path in steps:
        refuse_pickled(path)
    return sorted((step, path) for step, path in steps if complete(path))


def complete(path: Path) -> bool:
    """A checkpoint directory holding every file `save` writes (a lost file makes it no checkpoint: the
    run resumes from the one before, and rotation never deletes a directory someone else made)."""
    return storage.is_dir(path) and all(
        storage.is_file(path / name) and storage.stat(path / name).st_size for name in FILES
    )


def saved_train(path: Path, record: dict | None = None) -> TrainConfig:
    """The training settings a checkpoint was saved with (config.json "train"), checked as a config file is
    (types and ranges: `trainer.config.load_config`), so a value edited to 1e400 or null is one line naming
    the field, not an OverflowError in `resume_conflicts`. Keys this trainer does not know (a newer
    version's) are left out, as every record's extra keys are."""
    record = record if record is not None else read_config(path)

    def known(values: Any, template: Any) -> Any:
        if not (is_dataclass(template) and isinstance(values, dict)):
            return values
        names = {f.name: getattr(template, f.name) for f in fields(template)}
        # None in a field whose default is None: not set (a setting left to its default, as saved)
        kept = {k: v for k, v in values.items() if k in names and (v, names[k]) != (None, None)}
        return {k: known(v, names[k]) for k, v in kept.items()}

    try:
        return load_config(known(record.get("train", {}), TrainConfig()))
    except UsageError as error:
        raise DataError(f"{path / CONFIG}: train.{str(error).removeprefix('config: ')}") from None


def latest(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1][1] if found else None


def remove_partial(run_dir: Path) -> int:
    """Delete what killed checkpoint writes left in a run dir (`checkpoints/.step-N.tmp-PID`), no more."""
    return remove_stale_temps(run_dir, ["checkpoints/step-*"]) if storage.is_dir(run_dir) else 0


# ---------------------------------------------------------------- writing


def write_tensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """safetensors, fsynced; a failure (torch and safetensors report a full disk in their own ways) names
    the file."""
    from safetensors.torch import save_file

    try:
        save_file({k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}, str(path),
                  metadata={"format": "pt"})
        os.chmod(path, _new_file_mode())  # safetensors makes its files 0600; every other has the umask's
        storage.fsync_file(path)
    except Exception as error:
        cause = os_error_in(error)
        if cause is None or cause.filename is not None:
            raise
        raise OSError(cause.errno, cause.strerror, str(path)) from error


def _new_file_mode() -> int:
    """The mode a file created now gets: 0666 less the umask (read from /proc, which leaves it alone)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():  # the kernel's, not a store
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
    storage.write_text(directory / CONFIG, json.dumps(record, indent=2, sort_keys=True) + "\n")


def save_model(directory: Path, state: dict[str, torch.Tensor], record: dict) -> None:
    """A model checkpoint into `directory` (existing, being filled: a temporary one): `weights.safetensors`
    and `config.json` (`record`: at least {"model": BertConfig fields}, plus the file's size and sha256).
    What `trainer.import_hf` writes; `save` writes a training checkpoint the same way."""
    write_tensors(state, directory / WEIGHTS)
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
        write_tensors(states["model"], tmp / WEIGHTS)
        faults.reached("checkpoint_file")  # a kill here (tests) leaves a half-written checkpoint directory
        write_tensors(tensors, tmp / STATE_TENSORS)
        faults.reached("checkpoint_file")
        storage.write_text(tmp / STATE, json.dumps(state, indent=2, sort_keys=True) + "\n")
        faults.reached("checkpoint_file")
        _write_config(tmp, config, [WEIGHTS, STATE_TENSORS, STATE])
        faults.reached("checkpoint_file")
    for _, old in list_checkpoints(run_dir)[:-keep]:
        storage.remove_tree(old)
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
                        "corpusprep wrote)")
    same = storage.is_file(file) and storage.stat(file).st_size == entry["size"]
    if not same or sha256_file(file) != entry["sha256"]:
        raise DataError(f"{file}: missing, or not the file {CONFIG} records (size, sha256): changed or cut "
                        "short since it was written")
    return file


def load_tensors(file: Path, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """Tensors of a safetensors file whose header is checked first (safetensors_file.safetensors_header)."""
    from safetensors.torch import load, load_file

    safetensors_header(file)
    try:
        if storage.store_for(file).local(file) is None:  # an object store: its bytes, then the device
            return {k: v.to(device) for k, v in load(storage.read_bytes(file)).items()}
        return load_file(str(storage.local_path(file)), device=str(device))
    except Exception as error:  # safetensors' own errors: one line
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise DataError(f"{file}: cannot load ({first})") from None


def load_weights(path: Path, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """A checkpoint's model weights, checked against config.json: the file's sha256, and its header's
    tensors against the model config.json describes (within check_fits) before any is loaded."""
    record = read_config(path)
    file = verify(path, WEIGHTS, record)
    check_weights_file(file, bert_config(record["model"], path / CONFIG))
    return load_tensors(file, device)


def load_state(path: Path, device: str | torch.device = "cpu") -> dict[str, Any]:
    """A training checkpoint's state: {"step", "data", "rng", "last_metrics", "optimizer", "scheduler"}
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
                                f"{STATE_TENSORS} does not hold")
            return tensors[value["tensor"]]
        return {k: decode_state(v, tensors, where, f"{at}.{k}" if at else k) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_state(v, tensors, where, f"{at}[{i}]") for i, v in enumerate(value)]
    return value


def load(path: Path, name: str, map_location: str | torch.device = "cpu") -> Any:
    """One part of a training checkpoint: "model" (the weights), "optimizer", "scheduler" or "trainer"
    (step, data position, RNG states, last metrics)."""
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
        data["shards"] = storage.url(storage.resolve(data["shards"]))  # a URL (s3://...) as it is
    if vocab:  # as import_hf writes it: checkpoint.init_from checks it against the shards' vocab
        record["vocab"] = {"sha256": vocab.get("sha256"), "size": vocab.get("size")}
    return record


# ---------------------------------------------------------------- a checkpoint as a model (export, init_from)


def bert_config(saved: dict, where: Path) -> BertConfig:
    """BertConfig from a checkpoint's config.json "model" entry; an unknown field is an error, not ignored."""
    known = {f.name for f in fields(BertConfig)}
    if unknown := set(saved) - known:
        raise UsageError(f"{where}: unknown model field(s) {', '.join(sorted(unknown))} (newer trainer?)")
    try:
        config = BertConfig(**saved)
    except (TypeError, ValueError) as e:  # out of range (trainer.model_config.check_model), a wrong type
        raise DataError(f"{where}: {e}") from None
    return config  # its sizes checked as it was built: in range, and a model this machine holds (check_fits)


def find_checkpoint(path: Path) -> Path:
    """A checkpoint directory (weights.safetensors + config.json), or a run directory: its newest
    checkpoint; or a pipeline run directory holding one trainer run (train/, or PHASE/train/): that run's
    newest checkpoint. A checkpoint of the earlier, pickled format is refused (`refuse_pickled`)."""
    refuse_pickled(path)
    if not storage.exists(path / WEIGHTS) and not storage.is_dir(path / "checkpoints"):
        found = [*storage.glob(path, "*/checkpoints"), *storage.glob(path, "*/*/checkpoints")]
        runs = sorted(p.parent for p in found if storage.is_dir(p))
        if len(runs) > 1:
            names = ", ".join(str(r) for r in runs)
            raise UsageError(f"{path}: holds several trainer runs; export one of them: {names}")
        if runs:  # a pipeline run directory: its one training stage
            path = runs[0]
    if storage.is_dir(path / "checkpoints") and not storage.exists(path / WEIGHTS):
        found = latest(path)
        if found is None:
            raise UsageError(f"{path}: run directory without a complete checkpoint")
        path = found
    refuse_pickled(path)
    for name in (WEIGHTS, CONFIG):
        if not storage.is_file(path / name):
            raise UsageError(f"{path}: no {name} (not a trainer checkpoint directory)")
    return path


def load_checkpoint(path: Path) -> tuple[BertConfig, dict[str, torch.Tensor], dict]:
    """(model config, our state dict without wrapper prefixes, the saved config.json)."""
    path = find_checkpoint(Path(path))
    saved = read_config(path)
    config = bert_config(saved["model"], path / CONFIG)
    return config, strip_wrappers(load_weights(path)), saved


# ---------------------------------------------------------------- every check, for `corpusprep validate`


def check_checkpoint(path: Path) -> None:
    """Every check a command makes before it uses the checkpoint `path`, without using it (`corpusprep
    validate`): its records, its files against their sha256, the model it describes (within check_fits) and
    the weights' shapes (from the header); for a training checkpoint its settings, data position, and its
    optimizer and schedule state against those its settings build (on a meta model: no memory)."""
    record = read_config(path)
    config = bert_config(record["model"], path / CONFIG)
    check_weights_file(verify(path, WEIGHTS, record), config)
    if not storage.exists(path / STATE):  # a model checkpoint (an import's)
        return
    train = saved_train(path, record)
    state = load_state(path)
    data_position(state, train.schedule.grad_accum, path / STATE)
    with torch.device("meta"):
        model = BertForPreTraining(config)
    optimizer = build_optimizer(model, train.optim, fused=False)
    scheduler = build_scheduler(optimizer, train.schedule)  # it sets the groups' initial_lr
    optimizer_state(state["optimizer"], optimizer, f"{path / STATE}: optimizer")
    check_schedule(state["scheduler"], scheduler, state["step"], f"{path / STATE}: scheduler")
