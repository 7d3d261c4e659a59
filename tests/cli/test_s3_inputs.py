"""Commands reading their inputs from S3 (a real S3 server on 127.0.0.1: the `s3_server` fixture) write the
same bytes as on the same files on local disk; only what records the inputs' names differs."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corpusprep.demo_corpus import iter_demo_documents
from corpusprep.engine import storage
from tests.conftest import REPO

# the JSON files that record where the inputs were (paths, times, S3's ETag) or how long a step took, or hold
# the digest of such a file (the manifest): every other file must be byte-identical
RECORDS = {"artifact.json", "vocab_report.json", "stats.json"}

def corpusprep(*args: str | Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "corpusprep", *map(str, args), "--no-progress"]
    env = os.environ | {"PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def write_corpus(local: Path, remote: str) -> None:
    """Three files (one gzip-compressed) of the demo corpus, on local disk and under `remote`."""
    documents = [json.dumps({"text": text}) + "\n" for _, text in iter_demo_documents(0.1)]
    files = {"a.jsonl": "".join(documents[0::3]).encode(), "b.jsonl": "".join(documents[1::3]).encode(),
             "c.jsonl.gz": gzip.compress("".join(documents[2::3]).encode(), mtime=0)}
    local.mkdir()
    for name, data in files.items():
        (local / name).write_bytes(data)
        storage.write_bytes(f"{remote}/{name}", data)


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def without_records(value):
    """A record with the input rows cut to (source, size) and timings dropped: what must still match."""
    if isinstance(value, dict):
        dropped = ("seconds", "fingerprint", "files")  # "files": a manifest's digests (of the records)
        return {k: without_records(v) for k, v in value.items()
                if k not in dropped or (k == "files" and isinstance(v, list))}
    if isinstance(value, list) and value and isinstance(value[0], list) and len(value[0]) in (4, 5):
        return [row[1:3] for row in value]  # an input row: [path, source, size, mtime_ns(, tag)]
    return value


def assert_same_outputs(local: Path, remote: Path, data: str) -> None:
    """The same files; every one byte-identical (`data`, a glob, matches some) but the records."""
    ours, theirs = files_of(local), files_of(remote)
    assert sorted(ours) == sorted(theirs)
    differ = {name for name in ours if ours[name] != theirs[name]}
    assert differ <= RECORDS, differ
    assert any(Path(name).match(data) for name in set(ours) - differ)  # there were data files to compare
    for name in differ:
        assert without_records(json.loads(ours[name])) == without_records(json.loads(theirs[name])), name

@pytest.mark.slow  # 9 commands, each a Python start-up and a small vocab, sentences or pairs build (~6 s)
def test_vocab_sentences_and_pairs_from_s3_are_the_bytes_of_a_local_run(s3_dir, tmp_path):
    write_corpus(tmp_path / "corpus", f"{s3_dir}/corpus")
    local_vocab, s3_vocab = tmp_path / "vocab-local", tmp_path / "vocab-s3"
    for corpus, out in ((tmp_path / "corpus", local_vocab), (f"{s3_dir}/corpus", s3_vocab)):
        done = corpusprep("vocab", f"{corpus}/*.jsonl*", "-o", out, "--vocab-size", "600")
        assert done.returncode == 0, done.stderr
    assert_same_outputs(local_vocab, s3_vocab, "vocab.txt")
    recorded = json.loads((s3_vocab / "artifact.json").read_text())["identity"]["inputs"]["files"]
    names = ("a.jsonl", "b.jsonl", "c.jsonl.gz")
    assert [row[0] for row in recorded] == [f"{s3_dir}/corpus/{name}" for name in names]  # URLs, not paths
    again = corpusprep("vocab", f"{s3_dir}/corpus/*.jsonl*", "-o", s3_vocab, "--vocab-size", "600")
    assert again.returncode == 0 and "up to date" in again.stdout + again.stderr, again.stderr

    for corpus, out in ((tmp_path / "corpus", tmp_path / "local.txt"),
                        (f"{s3_dir}/corpus", tmp_path / "s3.txt")):
        done = corpusprep("sentences", f"{corpus}/*.jsonl*", "-o", out)
        assert done.returncode == 0, done.stderr
    sentences = (tmp_path / "local.txt").read_bytes()
    assert (tmp_path / "s3.txt").read_bytes() == sentences and sentences.count(b"\n") > 500

    local_pairs, s3_pairs = tmp_path / "pairs-local", tmp_path / "pairs-s3"
    for corpus, out in ((tmp_path / "corpus", local_pairs), (f"{s3_dir}/corpus", s3_pairs)):
        done = corpusprep("build-pairs", corpus, "--vocab", local_vocab, "-o", out, "--dupe-factor", "1")
        assert done.returncode == 0, done.stderr
    assert_same_outputs(local_pairs, s3_pairs, "*.parquet")

    # a rewritten object is another input: the vocab built from the old one is not reused
    storage.write_bytes(f"{s3_dir}/corpus/b.jsonl", (tmp_path / "corpus" / "b.jsonl").read_bytes() + b"{}\n")
    changed = corpusprep("vocab", f"{s3_dir}/corpus/*.jsonl*", "-o", s3_vocab, "--vocab-size", "600")
    assert changed.returncode == 2 and "built from other inputs" in changed.stderr, changed.stderr


@pytest.mark.slow  # a command's Python start-up (~0.5 s) and the S3 server's
def test_a_missing_s3_input_is_one_line(s3_dir, tmp_path):
    result = corpusprep("vocab", f"{s3_dir}/nothing/*.jsonl", "-o", tmp_path / "v", "--vocab-size", "600")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    expected = f"{s3_dir}/nothing/*.jsonl: no files match this pattern (outside models and outputs)"
    assert lines == [f"corpusprep: error: {expected}"], result.stderr
    assert not (tmp_path / "v").exists()
