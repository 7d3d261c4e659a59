"""bench/recipe_ablation.py, issue 38's change-by-change table: every row's settings are ones the trainer
accepts, and the bench runs end to end at its smallest (it calls the trainer, the export and the fine-tuning
code, so a change there can break it unseen: it was, once, when build_model took the task data)."""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys

import pytest

from bench.recipe_ablation import BY_NAME, ROWS, Bench, nest, steps_in
from tests.conftest import REPO, shared_path
from trainer.config import load_config


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_every_row_is_a_config_the_trainer_accepts(row, tmp_path):
    bench = Bench(argparse.Namespace(out=str(tmp_path), recipe=REPO / "pipelines" / "cpu-recipe.toml"))
    values, masking = bench.train_settings(row)
    config = load_config(nest(values | {"schedule.steps": steps_in(1800, 500.0, values)}))
    assert 0.1 <= masking <= 0.3
    for key, value in row.train.items():  # the row's own change reaches the config
        section, _, name = key.rpartition(".")
        node = config
        for part in section.split("."):
            node = getattr(node, part)
        assert getattr(node, name) == value, key


def test_a_budget_becomes_the_steps_that_read_its_sequences_batch_ramp_included(tmp_path):
    bench = Bench(argparse.Namespace(out=str(tmp_path), recipe=REPO / "pipelines" / "cpu-recipe.toml"))
    plain, _ = bench.train_settings(BY_NAME["recipe"])
    assert steps_in(600, 64 * 5, plain) == 3000  # 10 minutes at 5 steps of 64 a second
    ramp, _ = bench.train_settings(BY_NAME["batch-ramp"])
    steps = steps_in(600, 64 * 5, ramp)
    # 16 of 64 rows a step at first, then 32, 48 (whole micro-batches, rounded up: a third of the ramp each)
    # and all of them from 25% of the run: 3000 / (0.25 * 0.75 + 0.75) steps
    assert 3195 <= steps <= 3205
    from trainer.optim import micro_batches

    schedule = load_config(nest(ramp | {"schedule.steps": steps})).schedule
    reads = 16 * sum(micro_batches(i / steps, schedule) for i in range(steps))
    assert reads >= 600 * 64 * 5 > reads - 64


def head_conllu(source, out, sentences: int) -> str:
    with lzma.open(source, "rt", encoding="utf-8") as text:
        blocks = text.read().split("\n\n")[:sentences]
    out.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return str(out)


@pytest.mark.shared
@pytest.mark.slow  # ~1.5 minutes idle: data from a 300 kB corpus, two speeds, two short runs and fine-tunings
def test_the_smallest_ablation_pretrains_scores_and_tabulates(tmp_path):
    with lzma.open(shared_path("corpus/enwiki_AA.txt.xz"), "rt", encoding="utf-8") as text:
        corpus = text.read(300_000)
    (tmp_path / "small.txt").write_text(corpus[: corpus.rfind("</doc>") + 7], encoding="utf-8")
    ewt = shared_path("eval/ud_en_ewt")
    train = head_conllu(ewt / "en_ewt-ud-train.conllu.xz", tmp_path / "train.conllu", 120)
    dev = head_conllu(ewt / "en_ewt-ud-dev.conllu.xz", tmp_path / "dev.conllu", 40)
    data = {"input": {"paths": [str(tmp_path / "small.txt")]}, "pairs": {"validation_fraction": 0.05}}
    bench = [sys.executable, "bench/recipe_ablation.py", "--out", str(tmp_path / "out"), "--data-set",
             json.dumps(data)]
    rows = ["--rows", "recipe", "batch-ramp"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    task = ["--task", f"upos=--train {train} --dev {dev}",
            "--eval-extra", "--epochs 1 --seeds 1 --on-error skip"]
    for command in ([*bench, "run", "--budget", "5s", *rows], [*bench, "speed", "--steps", "12", *rows],
                    [*bench, "run", "--budget", "5s", "--seeds", "1", *rows, *task]):
        run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        if command[len(bench)] == "run" and "--seeds" not in command:  # before `speed`: no steps to take
            assert run.returncode == 1 and "no speed of row 'recipe': run `speed" in run.stderr, run.stderr
            continue
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    speeds = json.loads((tmp_path / "out" / "speeds.json").read_text())
    assert set(speeds["rows"]) == {"recipe", "batch-ramp"} and speeds["measured"]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert list(results["rows"]) == ["recipe", "batch-ramp"]
    assert results["rows"]["recipe"]["masking"] == 0.15 and results["rows"]["batch-ramp"]["masking"] == 0.30
    for entry in results["rows"].values():
        assert entry["scorer"] == "evaluate"
        found = entry["seeds"]["12345"]
        assert found["steps"] >= 5 and 0 <= found["val_mlm_acc"] <= 1  # 5 s at the measured speed
        assert found["upos"]["split"] == "dev" and 0 < found["upos"]["pretrained"] <= 1
    table = (tmp_path / "out" / "table.md").read_text()
    assert table in run.stdout and "| batch-ramp | batch ramp" in table
    for row, full in (("recipe", True), ("batch-ramp", False)):  # the ramp reached the trainer
        metrics = (tmp_path / "out" / "runs" / f"{row}-seed12345" / "metrics.jsonl").read_text().splitlines()
        batches = [json.loads(line)["seqs_per_step"] for line in metrics if "seqs_per_step" in line]
        assert batches and (min(batches) == 64) is full, (row, batches)
