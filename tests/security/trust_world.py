"""A small world of real corpusprep outputs (vocab, pairs, shards, a training run with checkpoints) built once
per test process, and the commands that read them, run in this process as a user runs them: one exit code
and what they printed. The tests copy what they damage."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import pickle
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from corpusprep.errors import guarded
from tests.trainer.conftest import build_shards

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def line(self) -> str:
        """The one error line (the last line of stderr); a traceback fails the test here."""
        assert "Traceback" not in self.err, self.err
        return self.err.strip().splitlines()[-1] if self.err.strip() else ""


@contextlib.contextmanager
def _captured(argv: list[str]):
    out, err = io.StringIO(), io.StringIO()
    handler = signal.getsignal(signal.SIGINT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _argv(argv):
            yield out, err
    finally:
        signal.signal(signal.SIGINT, handler)


@contextlib.contextmanager
def _argv(argv: list[str]):
    before = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = before


def corpusprep(*args: str | Path) -> Result:
    """`corpusprep ARGS` in this process, through the entry point's one-line error handling."""
    from corpusprep.cli import PREFIX, _run

    with _captured(["corpusprep", *map(str, args)]) as (out, err):
        code = guarded(_run, prefix=PREFIX)
    return Result(code, out.getvalue(), err.getvalue())


def trainer_run(*args: str | Path) -> Result:
    """`python -m trainer.run ARGS` in this process."""
    from trainer.run import main

    with _captured(["trainer.run", *map(str, args)]) as (out, err):
        code = main([str(a) for a in args])
    return Result(code, out.getvalue(), err.getvalue())


def trainer_export(*args: str | Path) -> Result:
    """`python -m trainer.export ARGS` in this process (guarded, as its __main__ runs it)."""
    from trainer.export import main

    with _captured(["trainer.export", *map(str, args)]) as (out, err):
        code = guarded(lambda: main([str(a) for a in args]))
    return Result(code, out.getvalue(), err.getvalue())


def train_args(shards: Path, run_dir: Path, steps: int = 2, *extra: str) -> list[str]:
    return ["--shards", str(shards), "--run-dir", str(run_dir), "--steps", str(steps), "--device", "cpu",
            "--checkpoint-every", "1", "--batch-size", "4", "--set", "data.chunk_rows=32", "--set",
            "eval.every=0",
            "--set", "eval.max_batches=1", "--set", "schedule.warmup_steps=1", *extra]


@dataclass(frozen=True)
class World:
    root: Path
    text: Path
    vocab: Path
    pairs: Path
    shards: Path
    run: Path  # a training run of 2 steps, a checkpoint after each


_WORLD: dict[str, World] = {}


def world(tmp_path_factory) -> World:
    """The outputs, built once per process (~10 s): copy a part before damaging it."""
    if "world" not in _WORLD:
        root = tmp_path_factory.mktemp("trust_world")
        shards = build_shards(root, max_mb=0.2, vocab_size=800, dupe_factor=1, num_shards=2)
        run = root / "run"
        done = trainer_run(*train_args(shards, run))
        assert done.code == 0, done.err
        _WORLD["world"] = World(root, root / "text.jsonl", root / "vocab", root / "pairs", shards, run)
    return _WORLD["world"]


def copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


class Payload:
    """A pickle that, when unpickled, creates the file `marker`: code running from data."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def payload(marker: Path) -> bytes:
    return pickle.dumps(Payload(marker))


def tree_digest(root: Path, skip: Path | None = None) -> dict[str, str]:
    """sha256 of every file under `root` (links as their target's name), but those under `skip`."""
    found = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        if path.is_symlink():
            found[path.relative_to(root).as_posix()] = f"-> {path.readlink()}"
        elif path.is_file():
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


SMALL_PIPELINE = [
    "input.format='jsonl'", "vocab.vocab_size=800", "pairs.max_seq_length=64", "pairs.dupe_factor=1",
    "pairs.docs_per_partition=200", "shard.num_shards=2", "train.model.preset='tiny'",
    "train.schedule.steps=2", "train.schedule.warmup_steps=1", "train.checkpoint.every=1",
    "train.eval.every=0",
    "train.eval.max_batches=1", "train.data.batch_size=4", "train.data.chunk_rows=32",
    "train.logging.every=1",
]


def pipeline_args(run_dir: Path, text: Path, *extra: str) -> list[str]:
    sets = [f"input.paths=['{text}']", *SMALL_PIPELINE]
    return ["run", str(REPO / "pipelines" / "demo.toml"), "--run-dir", str(run_dir), "--no-progress",
            "--workers", "1", *[a for s in sets for a in ("--set", s)], *extra]


def pipeline(tmp_path_factory, outputs: World) -> Path:
    """A pipeline run directory (vocab, pairs, shards and a 2-step train stage) of the world's text, built
    once per process: copy it before damaging it."""
    if "pipeline" not in _WORLD:
        run_dir = tmp_path_factory.mktemp("trust_pipeline") / "run"
        done = corpusprep(*pipeline_args(run_dir, outputs.text, "--until", "train"))
        assert done.code == 0, done.err
        _WORLD["pipeline"] = World(run_dir, outputs.text, run_dir / "vocab", run_dir / "pairs",
                                   run_dir / "shards", run_dir / "train")
    return _WORLD["pipeline"].root


def rewrite(directory: Path, name: str, data: dict) -> None:
    """Write `name` in an artifact, and its size and sha256 into the artifact's manifest: a hostile edit that
    covers its tracks, so that only the record's own content can be caught."""
    from corpusprep.engine.files import write_json

    write_json(directory / name, data)
    manifest = json.loads((directory / "artifact.json").read_text())
    content = (directory / name).read_bytes()
    manifest["files"][name] = {"size": len(content), "sha256": hashlib.sha256(content).hexdigest()}
    write_json(directory / "artifact.json", manifest)
