"""Small real pipelines for the tests: the demo corpus cut to a few hundred documents, many partitions."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from corpusprep.engine.files import read_json

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "pipelines" / "demo.toml"

# Many small partitions and shards, so that 1 vs 2 workers (or Ray) really split the work differently.
SMALL = [
    "pairs.docs_per_partition=60",
    "pairs.docs_per_chunk=60",
    "pairs.dupe_factor=2",
    "vocab.vocab_size=2000",
    "shard.num_shards=3",
    "train.model.preset='tiny'",
    "train.schedule.steps=6",
    "train.schedule.warmup_steps=1",
    "train.checkpoint.every=3",
    "train.eval.every=3",
    "train.eval.max_batches=2",
    "train.logging.every=1",
    "train.data.batch_size=8",
]


def write_small_corpus(path: Path, max_mb: float = 0.25) -> Path:
    from corpusprep.demo_corpus import write_demo_corpus

    write_demo_corpus(path, max_mb)
    return path


def write_small_vocab(corpus: Path, out: Path) -> Path:
    """One vocab.txt for every run that must give identical bytes: WordPiece training is not reproducible
    from one process to the next (the order of equally ranked pieces varies), so the runs share it."""
    from corpusprep.tokenize.vocab import VocabOptions, build_vocab

    build_vocab([corpus], out, VocabOptions(vocab_size=2000))
    return out / "vocab.txt"


def small_overrides(corpus: Path, vocab_txt: Path | None = None) -> list[str]:
    vocab = [f"vocab.from_vocab='{vocab_txt}'"] if vocab_txt else []
    return [f"input.paths=['{corpus}']", *SMALL, *vocab]


def cli(
    run_dir: Path, *args: str, env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """`corpusprep run` in its own process group. `.orphans`: processes of the group still alive 5 s after
    it ended (pool workers of a killed run must exit by themselves); they are killed before returning."""
    command = [
        sys.executable,
        "-m",
        "corpusprep",
        "run",
        str(DEMO),
        "--run-dir",
        str(run_dir),
        "--no-progress",
    ]
    proc = subprocess.Popen(
        [*command, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        deadline = time.monotonic() + 5
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        orphans = group_alive(proc.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    done.orphans = orphans
    return done


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pairs_digests(pairs_dir: Path) -> dict[str, str]:
    return {p.relative_to(pairs_dir).as_posix(): sha256(p) for p in sorted(pairs_dir.glob("*/*.parquet"))}


def shard_digests(shards_dir: Path) -> dict[str, str]:
    """Shard path -> sha256 from the manifest, after checking the files agree with it."""
    manifest = read_json(shards_dir / "manifest.json")
    found = {}
    for split in manifest["splits"].values():
        for shard in split["shards"]:
            assert sha256(shards_dir / shard["path"]) == shard["sha256"]
            found[shard["path"]] = shard["sha256"]
    return found


def assert_no_partial_files(root: Path) -> None:
    """Every Parquet or JSON file under a final name is complete (temporaries are hidden `.x.tmp-PID`)."""
    for path in root.rglob("*"):
        if any(part.startswith(".") for part in path.relative_to(root).parts) or not path.is_file():
            continue
        if path.suffix == ".parquet":
            assert pq.ParquetFile(path).metadata.num_rows >= 0  # opening raises on a truncated file
        elif path.suffix == ".json":
            read_json(path)
