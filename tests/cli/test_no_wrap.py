"""A one-line message stays one line when the output is not a terminal (a pipe, a log, CI): rich wrapped at 80
columns there, and a clone at a long path broke every test that read a message back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def piped(*args: str | Path) -> list[str]:
    """Run a command with stdout and stderr piped (never a terminal) at 80 columns; its output lines."""
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    run = subprocess.run([sys.executable, *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True)
    assert "Traceback" not in run.stderr, run.stderr
    return [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]


@pytest.mark.slow  # ~5.7 s idle
def test_messages_naming_a_long_path_are_one_line_each(tmp_path):
    deep = tmp_path.joinpath(*["a-directory-with-a-rather-long-name"] * 6)  # ~250 characters
    deep.mkdir(parents=True)
    corpus, sentences, vocab = deep / "demo.jsonl", deep / "sentences.txt", deep / "vocab"
    corpusprep = ("-m", "corpusprep")

    # demo-corpus, sentences (its summary, then "up to date"), vocab: messages printed through rich
    made = piped(*corpusprep, "demo-corpus", "-o", corpus, "--max-mb", "0.05")
    assert len(made) == 1 and made[0].startswith(f"{corpus}: ") and made[0].endswith(")"), made
    summary = piped(*corpusprep, "sentences", corpus, "-o", sentences)
    assert len(summary) == 1 and summary[0].startswith(f"{sentences}: ") and "MB/s" in summary[0], summary
    assert piped(*corpusprep, "sentences", corpus, "-o", sentences) == [
        f"{sentences}: up to date (same inputs and options); pass --overwrite to rebuild"]
    lines = piped(*corpusprep, "vocab", corpus, "-o", vocab, "--vocab-size", "400")
    assert len(lines) == 2 and lines[0].startswith(f"{vocab}: 400 tokens from "), lines  # and the [UNK] line
    assert lines[1].startswith("  on a sample of ") and "[UNK]" in lines[1], lines
    # an error naming the path, and a trainer entry point
    error = piped(*corpusprep, "sentences", deep / "missing.txt", "-o", deep / "out.txt")
    assert len(error) == 1 and str(deep / "missing.txt") in error[0], error
    (deep / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 7.0, "mlm_loss": 7.0}) + "\n")
    assert piped("-m", "trainer.plot", deep) == [str(deep / "curves.png")]
