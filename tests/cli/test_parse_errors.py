"""click's parse errors (a bad value, an unknown or missing option or argument, an unknown command) are one
line and exit 2 in every command, like every other error; --help and `corpusprep` alone still show help."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    (["shard", "pairs", "--vocab", "v", "-o", "s", "--masked-lm-prob", "x"],
     "shard: Invalid value for '--masked-lm-prob'"),
    (["sentences", "a.txt", "-o", "s.txt", "--bogus"], "sentences: No such option: --bogus"),
    (["sentences", "a.txt"], "sentences: Missing option '--output'"),
    (["sentences", "a.txt", "-o", "s.txt", "--format"], "sentences: Option '--format' requires an argument"),
    (["vocab", "a.txt", "-o", "v", "--vocab-size", "many"], "vocab: Invalid value for '--vocab-size'"),
    (["build-pairs", "a.txt", "--vocab", "v", "-o", "p", "--dupe-factor", "x"],
     "build-pairs: Invalid value for '--dupe-factor'"),
    (["inspect"], "inspect: Missing argument"),
    (["inspect", "s", "-n", "-1"], "inspect: Invalid value for '-n'"),
    (["stats", "s", "--nope"], "stats: No such option: --nope"),
    (["validate"], "validate: Missing argument"),
    (["run", "p.toml", "--workers", "x"], "run: Invalid value for '--workers'"),
    (["demo-corpus", "-o", "d.jsonl", "--max-mb", "-3"], "demo-corpus: Invalid value for '--max-mb'"),
    (["nope"], "No such command 'nope'"),
]


def corpusprep(*args: str, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "corpusprep", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize(("args", "expected"), CASES, ids=[" ".join(a[:2]) for a, _ in CASES])
def test_a_parse_error_is_one_line_and_exit_2(args, expected, tmp_path):
    result = corpusprep(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"corpusprep: error: {expected}"), result.stderr
    assert "Usage:" not in result.stderr and not result.stdout
    assert not list(tmp_path.iterdir())  # nothing written


def test_help_still_works(tmp_path):
    for args in (["--help"], ["shard", "--help"], ["sentences", "--help"]):
        result = corpusprep(*args, cwd=tmp_path)
        assert result.returncode == 0 and "Usage:" in result.stdout and not result.stderr, result.stderr
    alone = corpusprep(cwd=tmp_path)  # no command: the overview, as before
    assert alone.returncode == 2 and "Commands:" in alone.stdout + alone.stderr
