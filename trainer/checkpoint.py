"""Checkpoints: RUN_DIR/checkpoints/step-NNNNNNN/ holding separate state dicts.

    model.pt      plain state_dict (no `_orig_mod.` / `module.` prefixes); the format export reads
    optimizer.pt  scheduler.pt
    trainer.pt    step, batches consumed by each rank's data stream, RNG states
    config.json   {"train": resolved TrainConfig, "model": BertConfig, "vocab": the shards' {sha256, size}}

A checkpoint is written into a hidden temporary directory and renamed into place (`engine.files.atomic_dir`,
the same mechanism every corpusprep output uses), so a directory under a final name is always complete; a
killed write leaves only a temp dir, removed on the next start; a failed one (a full disk) removes it.
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

from corpusprep.engine import faults
from corpusprep.engine.files import atomic_dir, remove_stale_temps
from corpusprep.errors import DataError, UsageError, os_error_in
from trainer.config import WARMUP_SHARE, ModelConfig
from trainer.model import BertConfig, BertForPreTraining

STEP_DIR = re.compile(r"^step-(\d{7,})$")
FILES = ("model.pt", "optimizer.pt", "scheduler.pt", "trainer.pt", "config.json")  # what `save` writes


def checkpoint_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints, oldest first."""
    root = checkpoint_dir(run_dir)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := STEP_DIR.match(p.name)) and complete(p)]
    return sorted(found)


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
            return str(Path(value).resolve())  # saved resolved (`config_record`); older runs as typed
        if key == "schedule.warmup_steps" and value is None:  # the default, resolved from that run's steps
            return round(WARMUP_SHARE * (config.get("schedule.steps") or 0))  # None: a budgeted run
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
    """Delete what killed writes left in a run dir: checkpoint temp directories and temp files."""
    return remove_stale_temps(run_dir) if Path(run_dir).is_dir() else 0


def save(run_dir: Path, step: int, states: dict[str, Any], config: dict, keep: int) -> Path:
    """Write states[name] to name.pt and config.json, atomically as a directory; keep the newest `keep`.

    A full disk (or any failure) removes the partial directory: the previous checkpoints stay usable."""
    final = checkpoint_dir(run_dir) / f"step-{step:07d}"
    with atomic_dir(final) as tmp:
        for name, state in states.items():
            try:
                with open(tmp / f"{name}.pt", "wb") as f:
                    torch.save(state, f)
                    f.flush()
                    os.fsync(f.fileno())
            except Exception as error:  # torch reports a full disk as a RuntimeError: name the file
                cause = os_error_in(error)
                if cause is None or cause.filename is not None:
                    raise
                raise OSError(cause.errno, cause.strerror, str(final / f"{name}.pt")) from error
            faults.reached("checkpoint_file")
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    for _, old in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load(path: Path, name: str, map_location: str | torch.device = "cpu") -> Any:
    try:
        return torch.load(path / f"{name}.pt", map_location=map_location, weights_only=False)
    except Exception as e:  # torch raises many types for a truncated or foreign file
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(
            f"{path / (name + '.pt')}: cannot load ({first}); delete {path} to resume from the checkpoint "
            "before it"
        ) from None


def read_json(path: Path, hint: str = "") -> dict:
    """The JSON object in `path`; a file that is not one (truncated, edited by hand) is one line naming it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not valid JSON ({e.msg}: line {e.lineno} column {e.colno}){hint}") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not valid JSON (not UTF-8 text){hint}") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: not a JSON object{hint}")
    return data


def read_config(path: Path) -> dict:
    """A checkpoint's config.json, for a resume."""
    return read_json(path / "config.json", f"; delete {path} to resume from the checkpoint before it")


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
    check_state(state, saved_model, path / "model.pt")  # every weight, right shapes: nothing left random
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
        return BertConfig(**saved)
    except (TypeError, ValueError) as e:  # a value out of range (trainer.config.check_model), a wrong type
        raise DataError(f"{where}: {e}") from None


def find_checkpoint(path: Path) -> Path:
    """A checkpoint directory (model.pt + config.json), or a run directory: its newest checkpoint; or a
    pipeline run directory holding one trainer run (train/, or PHASE/train/): that run's newest checkpoint."""
    if not (path / "model.pt").exists() and not (path / "checkpoints").is_dir():
        found = [*path.glob("*/checkpoints"), *path.glob("*/*/checkpoints")]
        runs = sorted(p.parent for p in found if p.is_dir())
        if len(runs) > 1:
            names = ", ".join(str(r) for r in runs)
            raise UsageError(f"{path}: holds several trainer runs; export one of them: {names}")
        if runs:  # a pipeline run directory: its one training stage
            path = runs[0]
    if (path / "checkpoints").is_dir() and not (path / "model.pt").exists():
        found = latest(path)
        if found is None:
            raise UsageError(f"{path}: run directory without a complete checkpoint")
        path = found
    for name in ("model.pt", "config.json"):
        if not (path / name).is_file():
            raise UsageError(f"{path}: no {name} (not a trainer checkpoint directory)")
    return path


def load_checkpoint(path: Path) -> tuple[BertConfig, dict[str, torch.Tensor], dict]:
    """(model config, our state dict without wrapper prefixes, the saved config.json)."""
    path = find_checkpoint(Path(path))
    saved = read_json(path / "config.json")
    if not isinstance(saved.get("model"), dict):
        raise UsageError(f'{path / "config.json"}: no "model" entry')
    config = bert_config(saved["model"], path / "config.json")
    try:
        state = torch.load(path / "model.pt", map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for a truncated or foreign file
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise DataError(f"{path / 'model.pt'}: cannot load ({type(e).__name__}: {first})") from None
    if isinstance(state, dict) and isinstance(state.get("model"), dict):
        state = state["model"]
    return config, strip_wrappers(state), saved


def check_state(state: dict[str, torch.Tensor], config: BertConfig, where: Path) -> None:
    """Every key and shape our model has, no more: a checkpoint that would load with random weights fails."""
    with torch.device("meta"):  # shapes only, no memory, no init
        expected = {k: v.shape for k, v in BertForPreTraining(config).state_dict().items()}
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = [k for k in expected if k in state and state[k].shape != expected[k]]
    for what, keys in (("missing", missing), ("unexpected", unexpected), ("wrong shape of", wrong)):
        if keys:
            raise DataError(f"{where}: {what} {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}")
