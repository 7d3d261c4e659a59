"""Commands writing their outputs to S3 (a real S3 server on 127.0.0.1: the `s3_server` fixture) write the
bytes they write to local disk, and keep the artifact promises there: up to date on a rerun, a killed run
resumed, a lost file repaired, a changed input refused in one line, `--overwrite` rebuilding."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from corpusprep.demo_corpus import iter_demo_documents
from corpusprep.engine import faults, storage
from corpusprep.engine.lock import LOCK_NAME
from tests.conftest import REPO

# the records of run times (and of the output's own size and time: a sentences record) and the manifests
# holding their digests: the only files whose bytes may differ between two runs of one command
TIMED = {"vocab/vocab_report.json", "vocab/artifact.json", "pairs/artifact.json", "shards/artifact.json",
         ".sentences.txt.done.json"}


def corpusprep(*args: str | Path, fault: tuple[str, int] | None = None) -> subprocess.CompletedProcess:
    """`corpusprep ARGS` in a child process; `fault`: (point, n), SIGKILLed the n-th time at that point."""
    command = [sys.executable, "-m", "corpusprep", *map(str, args), "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != faults.ENV}
    env |= {"PYTHONPATH": str(REPO), "COLUMNS": "200", **(faults.spec(*fault) if fault else {})}
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def ok(*args: str | Path) -> str:
    done = corpusprep(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def write_corpus(directory: Path) -> Path:
    documents = [json.dumps({"text": text}) + "\n" for _, text in iter_demo_documents(0.1)]
    directory.mkdir()
    (directory / "a.jsonl").write_text("".join(documents[0::2]))
    (directory / "b.jsonl").write_text("".join(documents[1::2]))
    return directory


def local_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != LOCK_NAME}


def store_files(root: str) -> dict[str, bytes]:
    """Every object under the prefix `root`, by its name relative to it (through the storage seam), listed
    afresh (fsspec caches a listing for the process: the commands wrote since)."""
    storage.store_for(root).fs(root)[0].invalidate_cache()
    found = {}
    for path in storage.rglob(root, "*"):
        if storage.is_file(path):
            found[path.relative_to(Path(root)).as_posix()] = storage.read_bytes(path)
    return found


def without_times(value):
    """A record without its run times, its output's own size and time, and its files' digests."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k not in ("seconds", "output", "files")}
    return value


def assert_same_as_local(local_root: Path, s3_root: str) -> dict[str, bytes]:
    """Every file the same, byte for byte, the paths the records name aside (the local root's text is
    replaced by the URL's); the records of run times alike but for the times; every file on S3 the size
    and sha256 its manifest lists."""
    ours, theirs = local_files(local_root), store_files(s3_root)
    assert sorted(ours) == sorted(theirs) and len(ours) > 15
    swapped = {name: data.replace(str(local_root).encode(), s3_root.encode()) for name, data in ours.items()}
    differ = {name for name in ours if swapped[name] != theirs[name]}
    assert differ <= TIMED, differ
    for name in differ:
        assert without_times(json.loads(swapped[name])) == without_times(json.loads(theirs[name])), name
    for artifact in ("vocab", "pairs", "shards"):
        manifest = json.loads(theirs[f"{artifact}/artifact.json"])
        for name, entry in manifest["files"].items():
            data = theirs[f"{artifact}/{name}"]
            assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["size"], entry["sha256"]), name
    return theirs


def build_all(corpus: Path, root: str | Path) -> None:
    ok("vocab", corpus, "-o", f"{root}/vocab", "--vocab-size", "600")
    ok("sentences", corpus, "-o", f"{root}/sentences.txt")
    ok("build-pairs", corpus, "--vocab", f"{root}/vocab", "-o", f"{root}/pairs", "--dupe-factor", "2")
    ok("shard", f"{root}/pairs", "--vocab", f"{root}/vocab", "-o", f"{root}/shards", "--num-shards", "3")


@pytest.mark.slow  # 12 commands, each a Python start-up and a small vocab, sentences, pairs or shards (23 s)
def test_each_command_writes_to_s3_the_bytes_it_writes_to_disk(s3_dir, tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    build_all(corpus, tmp_path / "out")
    build_all(corpus, f"{s3_dir}/out")  # vocab and pairs read back from S3 as the next stage's inputs
    first = assert_same_as_local(tmp_path / "out", f"{s3_dir}/out")
    manifest = json.loads(first["shards/manifest.json"])
    assert manifest["pairs"]["path"] == f"{s3_dir}/out/pairs"  # recorded as the URL, `//` and all
    assert sum(1 for name in first if name.endswith(".parquet")) == 5  # 2 pairs files, 3 shards

    # a rerun of each is up to date, and writes nothing (S3's times are in seconds: a second goes by first)
    written = {name: storage.stat(f"{s3_dir}/out/{name}").st_mtime_ns for name in first}
    time.sleep(1.1)
    assert "up to date" in ok("vocab", corpus, "-o", f"{s3_dir}/out/vocab", "--vocab-size", "600")
    assert "up to date" in ok("sentences", corpus, "-o", f"{s3_dir}/out/sentences.txt")
    assert "nothing to do" in ok("build-pairs", corpus, "--vocab", f"{s3_dir}/out/vocab", "-o",
                                 f"{s3_dir}/out/pairs", "--dupe-factor", "2")
    ok("shard", f"{s3_dir}/out/pairs", "--vocab", f"{s3_dir}/out/vocab", "-o", f"{s3_dir}/out/shards",
       "--num-shards", "3")
    assert store_files(f"{s3_dir}/out") == first  # no lease left behind either
    assert {name: storage.stat(f"{s3_dir}/out/{name}").st_mtime_ns for name in first} == written


def shard_args(pairs: str | Path, vocab: str | Path, out: str | Path, seed: int = 5) -> list:
    return ["shard", pairs, "--vocab", vocab, "-o", out, "--num-shards", "4", "--seed", str(seed),
            "--workers", "1"]


def error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("corpusprep: error: "), result.stderr
    return lines[0]


@pytest.mark.slow  # 11 commands, 2 of them killed (27 s)
def test_a_killed_damaged_or_changed_output_on_s3_follows_the_local_rule(s3_dir, tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    vocab, local = f"{s3_dir}/vocab", tmp_path / "local"
    ok("vocab", corpus, "-o", vocab, "--vocab-size", "600")
    pairs_args = ["build-pairs", corpus, "--vocab", vocab, "--dupe-factor", "2", "--docs-per-partition", "40",
                  "--workers", "1"]
    ok(*pairs_args, "-o", local / "pairs")
    ok(*shard_args(local / "pairs", vocab, local / "shards"))

    # killed as its 2nd task finished: no manifest, whole files only; the rerun resumes to the same bytes
    pairs = f"{s3_dir}/pairs"
    killed = corpusprep(*pairs_args, "-o", pairs, fault=("task_done", 2))
    assert killed.returncode == -9, killed.stderr
    left = store_files(pairs)
    assert "artifact.json" not in left and ".work/run.json" in left and LOCK_NAME in left  # its lease
    for name in (n for n in left if n.endswith(".parquet")):
        assert pq.read_table(storage.open_file(f"{pairs}/{name}")).num_rows > 0, name
    ok(*pairs_args, "-o", pairs)  # the lease of a dead pid of this host is taken over at once
    assert store_files(pairs) == local_files(local / "pairs")

    # killed after its manifest, before its work directory went: the rerun finds it complete
    shards = f"{s3_dir}/shards"
    killed = corpusprep(*shard_args(pairs, vocab, shards), fault=("artifact_committed", 1))
    assert killed.returncode == -9 and ".work/run.json" in store_files(shards), killed.stderr
    ok(*shard_args(pairs, vocab, shards))
    assert ".work/run.json" not in store_files(shards)
    reference = local_files(local / "shards")
    assert_same_shards(shards, reference, local / "pairs", pairs)

    # a lost shard is rebuilt to the same bytes
    storage.remove(f"{shards}/train/shard-00002.parquet")
    assert "1 file(s) missing or changed" in ok(*shard_args(pairs, vocab, shards))
    assert_same_shards(shards, reference, local / "pairs", pairs)

    # another seed: refused in one line, then rebuilt with --overwrite
    refused = corpusprep(*shard_args(pairs, vocab, shards, seed=6))
    assert "built from other inputs or options (options.seed: 5 -> 6)" in error_line(refused)
    ok(*shard_args(pairs, vocab, shards, seed=6), "--overwrite")
    rebuilt = store_files(shards)
    assert json.loads(rebuilt["manifest.json"])["seed"] == 6 and LOCK_NAME not in rebuilt
    assert rebuilt["train/shard-00000.parquet"] != reference["train/shard-00000.parquet"]


def assert_same_shards(shards: str, reference: dict[str, bytes], local_pairs: Path, pairs: str) -> None:
    """The shards on S3 are the local ones: every file's bytes (manifest.json names its pairs' URL where the
    local one names their path), artifact.json but for manifest.json's digest."""
    found = store_files(shards)
    assert sorted(found) == sorted(reference)
    for name, data in reference.items():
        if name == "artifact.json":
            assert without_times(json.loads(found[name])) == without_times(json.loads(data))
        else:
            assert found[name] == data.replace(str(local_pairs).encode(), pairs.encode()), name


@pytest.mark.slow  # three commands and the S3 server (6 s)
def test_an_output_inside_another_output_or_under_a_file_on_s3_is_refused_in_one_line(s3_dir, tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    ok("vocab", corpus, "-o", f"{s3_dir}/vocab", "--vocab-size", "600")
    inside = corpusprep("sentences", corpus, "-o", f"{s3_dir}/vocab/sentences.txt")
    assert f"{s3_dir}/vocab/sentences.txt is inside corpusprep vocab" in error_line(inside)
    assert not storage.exists(f"{s3_dir}/vocab/sentences.txt")
    under_a_file = corpusprep("sentences", corpus, "-o", f"{s3_dir}/vocab/vocab.txt/s.txt")
    assert f"{s3_dir}/vocab/vocab.txt: is a file, not a directory (needed for" in error_line(under_a_file)
