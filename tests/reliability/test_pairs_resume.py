"""build-pairs killed with SIGKILL mid-run resumes to the bytes of an uninterrupted run; no partial file is
ever under a final name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pyarrow.parquet as pq

from corpusprep.engine import faults
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert


def build(corpus, vocab, out, kill_after=None):
    env = {k: v for k, v in os.environ.items() if k != faults.ENV}
    if kill_after:
        env.update(faults.spec("task_done", kill_after))
    command = [
        sys.executable,
        "-m",
        "corpusprep",
        "build-pairs",
        str(corpus),
        "--vocab",
        str(vocab),
        "-o",
        str(out),
        "--input-format",
        "bert",
        "--workers",
        "1",
        "--dupe-factor",
        "2",
        "--docs-per-partition",
        "50",
        "--no-progress",
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_sigkill_then_resume_gives_identical_files(tmp_path):
    vocab = make_vocab(tmp_path / "vocab")
    corpus = write_bert(tmp_path / "corpus.txt", synthetic_documents(400, seed=3))
    clean = build(corpus, vocab, tmp_path / "clean")
    assert clean.returncode == 0, clean.stderr
    # 400 documents: 2 tokenize tasks, then 8 x 2 pair tasks (+ validation); die after the 6th task.
    killed = build(corpus, vocab, tmp_path / "resumed", kill_after=6)
    assert killed.returncode == -signal.SIGKILL
    out = tmp_path / "resumed"
    finals = list(out.rglob("*.parquet"))
    assert finals and not (out / "stats.json").exists()
    for path in finals:  # complete files only: every one opens and holds rows
        assert pq.read_metadata(path).num_rows > 0
    resumed = build(corpus, vocab, out)
    assert resumed.returncode == 0, resumed.stderr
    assert not list(out.rglob(".*.tmp-*")) and not (out / "_work").exists()

    def contents(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}

    assert contents(out) == contents(tmp_path / "clean")
    again = build(corpus, vocab, out)
    assert again.returncode == 0 and "nothing to do" in again.stderr.lower() + again.stdout.lower()
