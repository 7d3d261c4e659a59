"""The model to evaluate, as a directory `transformers` loads, and what its pre-training cost.

The one place that knows what a model source is: a trainer run directory (its newest checkpoint), a
`step-N` checkpoint, a pipeline run directory holding one training stage, a `trainer.import_hf` output
(all through `trainer.export`, which owns reading checkpoints) or a Hugging Face BERT directory (a
`trainer.export` output, or any `save_pretrained` BERT) used as it is. The cost comes from the run's
saved config (`trainer.checkpoint.read_config`) and `metrics.jsonl`.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from corpusprep.engine import records as schemas
from corpusprep.engine import storage
from corpusprep.engine.lock import LOCK_NAME
from corpusprep.errors import DataError, UsageError
from corpusprep.tokenize import VocabInfo
from trainer.checkpoint import STEP_DIR, WEIGHTS, find_checkpoint, read_config
from trainer.export import check_hf_model, export, local_copy, trained_length

HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
CHECKPOINT_SIGNS = (WEIGHTS, "checkpoints")  # trainer/checkpoint.py: what find_checkpoint looks for


@dataclass(frozen=True)
class Pretrained:
    hf_dir: Path  # config.json, weights and tokenizer files for from_pretrained
    description: str  # for the report: what was loaded, at which step
    cost: dict[str, Any]  # steps, examples, tokens, seconds of the pre-training (known: False when unknown)


def is_hf_dir(path: Path) -> bool:
    """A Hugging Face model directory (config.json beside its weights) that is no trainer checkpoint."""
    return (
        storage.is_file(path / "config.json")
        and any(storage.is_file(path / name) for name in HF_WEIGHT_FILES)
        and not any(storage.exists(path / sign) for sign in CHECKPOINT_SIGNS)
    )


def check_hf_dir(path: Path) -> None:
    """A Hugging Face directory is read as import_hf reads one (`export.check_hf_model`: its config, sizes,
    a `pad_token_id` inside the vocab, and the weights' header), and its vocab.txt by the vocab's reader,
    before transformers opens anything."""
    check_hf_model(path)
    if storage.is_file(path / "vocab.txt"):
        VocabInfo.load(path)
    elif not storage.is_file(path / "tokenizer.json"):
        raise UsageError(f"{path}: no vocab.txt or tokenizer.json beside the model")


def locate(source: str | Path) -> Path:
    """The directory that holds the model: a Hugging Face directory as given, else the trainer checkpoint
    `find_checkpoint` picks (the newest of a run). One line for anything else, exit 2."""
    path, shown = Path(source), storage.url(source)
    if not storage.exists(path):
        raise UsageError(f"{shown}: no such file or directory (a run dir, a step-N checkpoint or an export)")
    if not storage.is_dir(path):
        raise UsageError(f"{shown}: not a directory (a run dir, a step-N checkpoint or an export)")
    if is_hf_dir(path):
        check_hf_dir(path)
        return path
    return find_checkpoint(path)


def model_shape(source: str | Path) -> dict[str, int]:
    """hidden_size, num_layers and max_position of the model at `source`, from its config (checked as
    export reads it): what its fine-tuning defaults, its max_length and its published figures depend on."""
    found = locate(source)
    if is_hf_dir(found):
        config = asdict(check_hf_model(found))
    else:  # exported for the evaluation: its positions end at the length it was trained on
        saved = read_config(found)
        config = dict(saved["model"])
        config["max_position"] = trained_length(saved, config["max_position"]) or config["max_position"]
    return {k: config[k] for k in ("hidden_size", "num_layers", "max_position")}


def model_files(source: str | Path) -> list[list[Any]]:
    """[path, size, mtime_ns] of the files that decide the model (an evaluation's fingerprint); not an
    export's or import's lock file, which each run of the command rewrites (its pid)."""
    found = [p for p in storage.list_dir(locate(source)) if p.name != LOCK_NAME and storage.is_file(p)]
    return [[str(storage.resolve(p)), storage.stat(p).st_size, storage.stat(p).st_mtime_ns] for p in found]


@contextlib.contextmanager
def pretrained(source: str | Path, vocab: str | Path | None = None) -> Iterator[Pretrained]:
    """The model as a Hugging Face directory: as it is, or exported for the evaluation into a temporary
    directory (removed afterwards)."""
    found = locate(source)
    with tempfile.TemporaryDirectory(prefix="corpusprep-evaluate-") as scratch:
        if is_hf_dir(found):
            hf_dir = local_copy(found, Path(scratch) / "hf")  # itself on a local disk
            yield Pretrained(hf_dir, f"{storage.url(found)} (a Hugging Face directory)", export_cost(found))
            return
        hf_dir = export(found, Path(scratch) / "hf", vocab)
        cost = pretraining_cost(found)
        step = f", step {cost['steps']:,}" if cost.get("steps") is not None else ""
        yield Pretrained(hf_dir, f"{storage.url(found)}{step}", cost)


def export_cost(path: Path) -> dict[str, Any]:
    return {"known": False, "note": "a Hugging Face directory records none; evaluate the run dir to see it"}


def pretraining_cost(checkpoint: Path) -> dict[str, Any]:
    """Steps, sequences, tokens and seconds of training up to `checkpoint`, from its config and the run's
    metrics.jsonl: each progress record gives its window's sequences and tokens per second, so a window
    of k steps took k x batch x accumulation / (sequences/s) seconds and saw tokens/s x that many tokens.
    Counted for one process: under torchrun multiply sequences and tokens by the number of processes (the
    run does not record it). An imported model (`trainer.import_hf`) has no training of ours to count.
    Both files are read from disk: a value that is not a finite positive number (a whole one for a size or
    a step), or a total beyond what a count holds, leaves what it decides unknown, with a note naming it."""
    match = STEP_DIR.match(checkpoint.name)
    if match is None or checkpoint.parent.name != "checkpoints":
        return {"known": False, "note": "an imported model: its pre-training was not ours to measure"}
    step = int(match.group(1))
    train = read_config(checkpoint).get("train", {})
    batch, accum = _field(train, "data", "batch_size"), _field(train, "schedule", "grad_accum")
    if not (_whole(batch) and _whole(accum) and step * batch * accum <= schemas.MAX_INT):
        return {"known": True, "steps": step, "note": "no batch size in its config.json (or not a whole "
                "number > 0): examples, tokens and time unknown"}
    per_step = batch * accum
    cost = {"known": True, "steps": step, "examples": step * per_step, "tokens": None, "seconds": None}
    path = checkpoint.parent.parent / "metrics.jsonl"
    windows = [(n, r) for n, r in metrics(path)
               if "seq_per_s" in r and _whole(r.get("step")) and r["step"] <= step]
    if not windows:
        return cost | {"note": "no metrics.jsonl: tokens and time unknown"}
    seconds = tokens = 0.0
    previous = 0
    for number, record in windows:
        rate, token_rate = record["seq_per_s"], record.get("tokens_per_s")
        bad = next((k for k, v in (("seq_per_s", rate), ("tokens_per_s", token_rate)) if not _positive(v)),
                   None)
        if bad or record["step"] <= previous:
            why = f"{bad} is not a finite number > 0" if bad else f"step {record['step']} after {previous}"
            return cost | {"note": f"{path}:{number}: {why}: tokens and time unknown"}
        took = (record["step"] - previous) * per_step / rate
        seconds, tokens, previous = seconds + took, tokens + token_rate * took, record["step"]
    if not (math.isfinite(seconds) and tokens <= schemas.MAX_INT):
        return cost | {"note": f"{path}: its rates give {tokens:.3g} tokens in {seconds:.3g} s, beyond any "
                       "run: tokens and time unknown"}
    note = "one process; from metrics.jsonl" + ("" if previous == step else f" up to step {previous}")
    return cost | {"tokens": round(tokens), "seconds": round(seconds, 1), "note": note}


def _field(record: Any, *keys: str) -> Any:
    """record[k1][k2]... of a record read from disk (any shape): None where a level is missing."""
    for key in keys:
        record = record.get(key) if isinstance(record, dict) else None
    return record


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= schemas.MAX_INT


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def metrics(path: Path) -> list[tuple[int, dict]]:
    """(line number, record) of each record of a metrics.jsonl (a line a kill cut short, or one that is
    not UTF-8 JSON, is passed over, as the trainer does)."""
    if not storage.is_file(path):
        return []
    try:
        lines = schemas.read_bytes(path).splitlines()  # a regular file, of a bounded size
    except OSError as error:
        raise DataError(f"{path}: cannot read ({error})") from None
    records = []
    for number, line in enumerate(lines, 1):
        with contextlib.suppress(DataError):
            record = schemas.parse_json(line, path)
            if isinstance(record, dict):
                records.append((number, record))
    return records
