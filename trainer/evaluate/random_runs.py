"""A store of random-init fine-tuning runs shared between evaluations (`--random-runs DIR`).

The random init reads no pre-trained weight: its run is made of the export's other files (config.json and
the tokenizer's), the task's data (its files' names and content, as read: kind and labels), the run's
settings and seed, its threads, the device, the libraries and this package's code. Evaluating many
checkpoints of one architecture (a run's steps, pre-training seeds, models that differ only in their data
or schedule) needs that random twin fine-tuned once. Each random run is stored under a name hashed from all
of the above, which its entry also records; a later evaluation whose random run has that name copies it
(its record and predictions) instead of fine-tuning it again, and its record says so (`reused`, 0 seconds).

An entry is read as untrusted: its record through its schema, made of what this run is made of, of the
init, seed and configuration asked for; every file it lists a predictions file of the run inside the entry
(no link followed), of the size and SHA-256 recorded. A damaged or unreadable entry is not used: the run is
made again and replaces it, with a line saying why. Two evaluations may share a store: an entry is written
whole or not at all, and one kept by the other first is left as it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
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
from corpusprep.engine.manifest import MANIFEST, sha256_file
from corpusprep.engine.records import inside, load_record
from corpusprep.engine.rng import stable_hash
from corpusprep.errors import DataError, UsageError
from trainer.evaluate.data import TaskData
from trainer.evaluate.settings import EvalSettings

RECORD = "run.json"  # an entry's record: the run's, what it is made of, and its files
RUN = "{run}"  # the run's name in a stored file's name
STORED_NAME = re.compile(rf"predictions/{re.escape(RUN)}-[\w-]+(\.[\w-]+)+", re.ASCII)  # SPLIT.SUFFIX...
# an export's files a random init does not read: weights in any of transformers' formats, the export's
# manifest (it names the checkpoint), a lock, a model card
NOT_READ = (".safetensors", ".bin", ".h5", ".msgpack", ".ckpt", ".pt", ".pth", ".index.json", ".md")
PLACE = ("train", "dev", "test", "vocab", "seeds", "seed", "benchmark")  # settings no single run depends on
CODE = Path(__file__).parent  # trainer/evaluate: how a run is made
MAX_FILE = 1 << 30  # bytes of a stored file read back (a predictions file of 1M examples is ~200 MB)


@dataclass(frozen=True)
class RandomRuns:
    """The store (`directory`) and what every random run of this evaluation is made of (`identity`)."""

    directory: Path
    identity: str

    @classmethod
    def of(cls, directory: str | Path, hf_dir: Path, data: TaskData, settings: EvalSettings, threads: int,
           device: str) -> RandomRuns:
        """The store at `directory` (made here; one line if it cannot be) for this evaluation's runs."""
        import numpy
        import tokenizers
        import torch
        import transformers

        place = storage.local_path(directory)
        if storage.exists(place) and not storage.is_dir(place):
            raise UsageError(f"{directory}: not a directory (--random-runs)")
        storage.makedirs(place)
        if not os.access(place, os.W_OK):
            raise UsageError(f"{directory}: not writable (--random-runs)")
        export = {p.name: sha256_file(p) for p in storage.list_dir(hf_dir) if storage.is_file(p)
                  and not p.name.endswith(NOT_READ) and p.name not in (MANIFEST, LOCK_NAME)}
        files = {split: [Path(path).name, sha256_file(path)] for split in ("train", "dev", "test")
                 if (path := getattr(settings, split))}
        code = hashlib.sha256()
        for path in sorted(storage.rglob(CODE, "*.py")):
            code.update(f"{path.relative_to(CODE)}\0".encode() + storage.read_bytes(path))
        cuda = torch.cuda.get_device_name() if device.startswith("cuda") else None
        made_of = {"export": export, "data": {"files": files, "kind": data.kind, "labels": list(data.labels)},
                   "settings": {k: v for k, v in asdict(settings).items() if k not in PLACE},
                   "threads": threads, "device": [device, cuda, torch.backends.cpu.get_cpu_capability()],
                   "code": code.hexdigest(), "machine": platform.machine(),
                   "versions": [platform.python_version(), torch.__version__, transformers.__version__,
                                tokenizers.__version__, numpy.__version__]}
        return cls(place, json.dumps(made_of, sort_keys=True))

    def entry(self, task: Task) -> Path:
        """The entry of a random run's task (its seed and configuration)."""
        _, _, seed, config = task.args
        return self.directory / f"random-{stable_hash(self.identity, seed, list(config)):016x}"

    def take(self, out: Path, task: Task, splits: tuple[str, ...]) -> tuple[dict, list[str]] | None:
        """The stored run of `task` copied into `out`: its record (with `reused`) and the files written; None
        where the store has none, or a damaged or unreadable one (said: the run is made again). `splits`:
        those it must score."""
        entry = self.entry(task)
        if not storage.is_file(entry / RECORD):
            return None
        _, _, seed, config = task.args
        try:
            record, files = self.load(entry, seed, config)
            kept = {name.replace(RUN, task.id, 1): data for name, data in files.items()}
            missing = [f"files: no {name.replace(task.id, RUN, 1)}" for name in task.outputs[1:]
                       if name not in kept]
            missing += [f"record: scores: no {split} split" for split in splits
                        if split not in record["scores"]]
            if missing:
                raise DataError(f"{entry / RECORD}: {missing[0]}")
            for name, data in kept.items():
                storage.write_bytes(out / name, data)
        except (DataError, OSError) as error:
            print(f"  random runs: {error}; fine-tuned again", file=sys.stderr, flush=True)
            return None
        return record | {"reused": entry.name, "seconds": 0.0}, list(kept)

    def load(self, entry: Path, seed: int, config: tuple) -> tuple[dict[str, Any], dict[str, bytes]]:
        """An entry's run record and files (stored name -> bytes), checked: DataError naming the file and
        what is wrong."""
        path = entry / RECORD
        found = load_record(path, "random_run")
        record, asked = found["record"], {"lr": config[0], "batch_size": config[1], "epochs": config[2]}
        if json.dumps(found["made_of"], sort_keys=True) != self.identity:
            raise DataError(f"{path}: made_of: not what this run is made of")
        if (record["init"], record["seed"], record.get("config")) != ("random", seed, asked):
            made = f"{record['init']} seed {record['seed']} {json.dumps(record.get('config'))}"
            raise DataError(f"{path}: record: the run of {made}, not of random seed {seed} "
                            f"{json.dumps(asked)}")
        files = {}
        for name, expected in found["files"].items():
            if not STORED_NAME.fullmatch(name):
                raise DataError(f"{path}: files: {json.dumps(name)} is not a predictions file of the run")
            file = inside(entry, name, write=True)  # no link followed, the last component included
            data = storage.read_bounded(file, min(expected["size"], MAX_FILE))
            if len(data) != expected["size"] or hashlib.sha256(data).hexdigest() != expected["sha256"]:
                raise DataError(f"{file}: not the file {path} lists (its size or SHA-256)")
            files[name] = data
        return record, files

    def keep(self, out: Path, task: Task, record: dict[str, Any], files: list[str]) -> None:
        """The run (its record and `files`, under `out`) into the store, whole or not at all, replacing a
        damaged entry; an intact one (another evaluation's, kept first) is left as it is."""
        entry, (_, _, seed, config) = self.entry(task), task.args
        with contextlib.suppress(DataError, OSError):
            self.load(entry, seed, config)
            return
        listed = {f.replace(task.id, RUN, 1): {"size": storage.stat(out / f).st_size,
                                               "sha256": sha256_file(out / f)} for f in files}
        try:
            with storage.atomic_dir(entry) as scratch:
                for name, f in zip(listed, files, strict=True):
                    storage.copy_file(out / f, Path(scratch) / name)
                write_json(Path(scratch) / RECORD, {"record": record, "made_of": json.loads(self.identity),
                                                    "files": listed})
        except OSError as error:  # a full disk, a store made read-only: the run stands, the store lacks it
            print(f"  random runs: {entry} not kept ({error})", file=sys.stderr, flush=True)
