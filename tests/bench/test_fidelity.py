"""bench/fidelity.py at its smallest setting, end to end: the bench imports the trainer's loader and
checkpoint reader, so a change there could break it unseen (it was, for a round, after the trust-boundary
work). Each arm's data is built, trained a few steps and scored on the one held-out set."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, shared_path

pytestmark = [pytest.mark.shared, pytest.mark.slow]  # ~40 s idle: three tiny training runs


def test_the_smallest_bench_trains_and_scores_every_arm(tmp_path):
    corpus = shared_path("corpus/enwiki_AA.txt.xz").parent
    command = [sys.executable, "bench/fidelity.py", "--mb", "0.6", "--heldout", "0.25", "--steps", "8",
               "--batch-size", "4", "--length", "64", "--vocab-size", "1000", "--seeds", "1", "--maskings",
               "1", "--arms", "ours-nsp", "ours-mlm", "hf-grouped", "--work", str(tmp_path),
               "--shared", str(corpus)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    table = [line.split("|")[1:-1] for line in lines]
    rows = {cells[1].strip(): [c.strip() for c in cells] for cells in table[1:]}  # after the header
    assert set(rows) == {"ours-nsp", "ours-mlm", "hf-grouped"}, run.stdout
    for arm, cells in rows.items():
        accuracy, standard_error = float(cells[3]), float(cells[4])
        assert 0 <= accuracy <= 1 and 0 < standard_error < 0.1, (arm, cells)
    assert rows["ours-mlm"][5] == "reference" and rows["ours-nsp"][5] == "reference"
    assert re.fullmatch(r"[+-]0\.\d{4} \(0\.\d{4}\)", rows["hf-grouped"][5]), rows["hf-grouped"]
    assert float(rows["ours-nsp"][7]) > 0  # NSP accuracy on the held-out pairs
    assert re.search(r"floors on the same held-out set: random init 0\.\d+, unigram 0\.\d+", run.stdout)
