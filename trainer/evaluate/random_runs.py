"""A store of random-init fine-tuning runs shared between evaluations (`--random-runs DIR`).

The random init reads no pre-trained weight: its run is made of the export's other files (config.json and
the tokenizer's), the task's data, the run's settings and seed, its threads, the device and the libraries.
Evaluating many checkpoints of one architecture (a run's steps, pre-training seeds, models that differ only
in their data or schedule) needs that random twin fine-tuned once. Each random run is stored under a name
hashed from all of the above; a later evaluation whose random run has the same name copies it (its record
and predictions) instead of fine-tuning it again, and its record says so (`reused`).

An entry is read as untrusted: its record through the run's schema, of the init, seed and configuration
asked for, with every file it lists a plain name inside it. A damaged entry is not used: the run is made
again and replaces it, with a line saying why.
"""

from __future__ import annotations

import json
import platform
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.executor import Task
from corpusprep.engine.files import write_json
from corpusprep.engine.lock import LOCK_NAME
from corpusprep.engine.manifest import sha256_file
from corpusprep.engine.records import load_record
from corpusprep.engine.rng import stable_hash
from corpusprep.errors import DataError
from trainer.evaluate.settings import EvalSettings

RECORD = "run.json"  # an entry's record: the run's, and the files that go with it
RUN = "{run}"  # the run's name in a stored file's name
STORED_NAME = re.compile(r"predictions/\{run\}-\w+(\.\w+)+", re.ASCII)  # predictions/{run}-SPLIT.SUFFIX
NOT_READ = frozenset({"model.safetensors", "pytorch_model.bin", "artifact.json", LOCK_NAME})  # weights...
PLACE = ("train", "dev", "test", "vocab", "seeds", "seed", "benchmark")  # settings no single run depends on


@dataclass(frozen=True)
class RandomRuns:
    """The store (`directory`) and what every random run of this evaluation is made of (`identity`)."""

    directory: Path
    identity: str

    @classmethod
    def of(cls, directory: str | Path, hf_dir: Path, settings: EvalSettings, threads: int,
           device: str) -> RandomRuns:
        import torch
        import transformers

        files = {p.name: sha256_file(p) for p in storage.list_dir(hf_dir)
                 if storage.is_file(p) and p.name not in NOT_READ and not p.name.endswith(".index.json")}
        data = {split: sha256_file(path) for split in ("train", "dev", "test")
                if (path := getattr(settings, split))}
        made_of = {"export": files, "data": data, "threads": threads, "device": device,
                   "settings": {k: v for k, v in asdict(settings).items() if k not in PLACE},
                   "versions": [torch.__version__, transformers.__version__, platform.machine()]}
        return cls(Path(directory), json.dumps(made_of, sort_keys=True))

    def entry(self, seed: int, config: tuple) -> Path:
        return self.directory / f"random-{stable_hash(self.identity, seed, list(config)):016x}"

    def take(self, entry: Path, out: Path, task: Task,
             splits: tuple[str, ...]) -> tuple[dict, list[str]] | None:
        """The stored run of `task` copied into `out`: its record (with `reused`) and the files written; None
        where the store has none, or a damaged one (said: the run is made again). `splits`: those it must
        score."""
        if not storage.is_file(entry / RECORD):
            return None
        _, _, seed, config = task.args
        try:
            stored = read_entry(entry, seed, config)
            kept = [f.replace(RUN, task.id, 1) for f in stored["files"]]
            missing = [f"files: no {f.replace(task.id, RUN, 1)}" for f in task.outputs[1:] if f not in kept]
            missing += [f"record: scores: no {split} split" for split in splits
                        if split not in stored["record"]["scores"]]
            if missing:
                raise DataError(f"{entry / RECORD}: {missing[0]}")
            for stored_name, target in zip(stored["files"], kept, strict=True):
                storage.copy_file(entry / stored_name, out / target)
        except DataError as error:
            print(f"  random runs: {error}; fine-tuned again", file=sys.stderr, flush=True)
            return None
        return stored["record"] | {"reused": entry.name}, kept

    def keep(self, entry: Path, out: Path, name: str, record: dict[str, Any], files: list[str]) -> None:
        """The run (its record and `files`, under `out`) into the store, whole or not at all."""
        stored = [f.replace(name, RUN, 1) for f in files]
        with storage.atomic_dir(entry) as scratch:
            for source, target in zip(files, stored, strict=True):
                storage.copy_file(out / source, Path(scratch) / target)
            write_json(Path(scratch) / RECORD, {"record": record, "files": stored})


def read_entry(entry: Path, seed: int, config: tuple) -> dict[str, Any]:
    """An entry's record, checked (DataError naming the file and field)."""
    path = entry / RECORD
    found = load_record(path, "random_run")
    record = found["record"]
    asked = {"lr": config[0], "batch_size": config[1], "epochs": config[2]}
    if (record["init"], record["seed"], record.get("config")) != ("random", seed, asked):
        raise DataError(f"{path}: record: the run of {record['init']} seed {record['seed']} "
                        f"{record.get('config')}, not of random seed {seed} {asked}")
    for name in found["files"]:
        if not STORED_NAME.fullmatch(name):
            raise DataError(f"{path}: files: {json.dumps(name)} is not a predictions file of the run")
        if not storage.is_file(entry / name):
            raise DataError(f"{path}: files: {json.dumps(name)} is not in {entry}")
    return found
