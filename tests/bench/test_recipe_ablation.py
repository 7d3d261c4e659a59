"""bench/recipe_ablation.py, issue 38's change-by-change table: every row's settings are ones the trainer
accepts, and the bench runs end to end at its smallest (it calls the trainer, the export and the fine-tuning
code, so a change there can break it unseen: it was, once, when build_model took the task data)."""

from __future__ import annotations

import argparse
import json
import lzma
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench import recipe_ablation
from bench.recipe_ablation import BY_NAME, ROWS, Bench, Row, config_of, median_range, steps_in, verdict, write
from tests.conftest import REPO, shared_path


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_every_row_is_a_config_the_trainer_accepts(row, tmp_path):
    bench = Bench(argparse.Namespace(out=str(tmp_path), recipe=recipe_ablation.RECIPE))
    values, masking = bench.train_settings(row)
    config = config_of(values | {"schedule.steps": steps_in(1800, 500.0, values)})
    assert 0.1 <= masking <= 0.3
    for key, value in row.train.items():  # the row's own change reaches the config
        section, _, name = key.rpartition(".")
        node = config
        for part in section.split("."):
            node = getattr(node, part)
        assert getattr(node, name) == value, key


def test_a_budget_becomes_the_steps_that_read_its_sequences_batch_ramp_included(tmp_path):
    bench = Bench(argparse.Namespace(out=str(tmp_path), recipe=recipe_ablation.RECIPE))
    plain, _ = bench.train_settings(BY_NAME["recipe"])
    assert steps_in(600, 64 * 5, plain) == 3000  # 10 minutes at 5 steps of 64 a second
    ramp, _ = bench.train_settings(BY_NAME["batch-ramp"])
    steps = steps_in(600, 64 * 5, ramp)
    # 16 of 64 rows a step at first, then 32, 48 (whole micro-batches, rounded up: a third of the ramp each)
    # and all of them from 25% of the run: 3000 / (0.25 * 0.75 + 0.75) steps
    assert 3195 <= steps <= 3205
    from trainer.optim import micro_batches

    schedule = config_of(ramp | {"schedule.steps": steps}).schedule
    reads = 16 * sum(micro_batches(i / steps, schedule) for i in range(steps))
    assert reads >= 600 * 64 * 5 > reads - 64


def test_a_run_or_evaluation_of_other_settings_is_another_never_one_reused(tmp_path, monkeypatch):
    """Runs and evaluations are named by what makes them: a dry run's models and scores are not found again
    by a real run into the same --out, nor a run of another budget resumed with the new one's steps."""
    def bench(budget: str, extra: str = "") -> Bench:
        args = argparse.Namespace(out=str(tmp_path), recipe=recipe_ablation.RECIPE,
                                  data_set={}, budget=budget, eval_extra=extra, data=str(tmp_path),
                                  task=["upos=--train t.conllu --dev d.conllu"])
        made = Bench(args)
        monkeypatch.setattr(made, "shards", lambda masking, changed: tmp_path / f"shards{masking}")
        return made

    (tmp_path / "speeds.json").write_text(json.dumps({"rows": {"recipe": {"seq_per_s": 500.0}}}))
    row = BY_NAME["recipe"]
    short, long = bench("5s").pretraining(row, 1), bench("30m").pretraining(row, 1)
    assert short[0] != long[0] and short[0] == bench("5s").pretraining(row, 1)[0]  # stable names
    assert bench("5s").pretraining(row, 2)[0] != short[0]
    assert short[0].name.startswith("recipe-seed1-") and "schedule.steps=40" in " ".join(short[1])
    quick = bench("5s", "--epochs 0.05").evaluation(short[0], "upos")
    full = bench("5s").evaluation(short[0], "upos")
    assert quick[0] != full[0] and "--epochs" in quick[1] and "--epochs" not in full[1]


def test_a_data_change_holds_from_its_row_on_in_shards_of_its_own(tmp_path, monkeypatch):
    """A row's data changes (the `cased` row's vocab) reach its shards and every row below it, never a row
    above; the name of shards with changes says so (the recipe's stay `data-mask15`)."""
    args = argparse.Namespace(out=str(tmp_path), recipe=recipe_ablation.RECIPE, data_set={})
    built = []
    monkeypatch.setattr(recipe_ablation, "run", lambda command, log: built.append(command))
    later = Row("later", "a row after the data change", {"optim.lr": 1e-4})
    monkeypatch.setattr(recipe_ablation, "ROWS", [*ROWS, later])
    bench = Bench(args)
    assert bench.data_of(BY_NAME["recipe"]).parent.name == "data-mask15"
    assert bench.data_of(BY_NAME["mini"]).parent.name == "data-mask15"
    assert bench.data_of(BY_NAME["batch-ramp"]).parent.name == "data-mask30"
    cased = bench.data_of(BY_NAME["cased"]).parent.name
    assert cased.startswith("data-mask30-") and bench.data_of(later).parent.name == cased
    assert cased != bench.shards(0.30, {"vocab.cased": False}).parent.name
    sets = [" ".join(command) for command in built]
    assert ["vocab.cased=true" in line for line in sets] == [False, False, False, True, True, False]
    assert all("shard.masked_lm_prob=0.3" in line for line in sets[2:])
    assert "shard.max_predictions_per_seq=20" in sets[2]
    bench.shards(0.4, {"pairs.max_seq_length": 128})  # a longer row predicts more: 40% of 128, rounded up
    assert "shard.max_predictions_per_seq=52" in " ".join(built[-1])


def test_shards_built_from_other_data_settings_are_refused_not_reused(tmp_path, monkeypatch):
    """The runs are named after their shards' path: shards found there that another recipe (or an edited
    one) built would pass for this one's. They are refused in one line; the same settings are reused."""
    from pipelines.load import load_pipeline

    recipe = recipe_ablation.RECIPE
    monkeypatch.setattr(recipe_ablation, "run", lambda command, log: pytest.fail("rebuilt"))
    made = tmp_path / "data-mask15"
    (made / "shards").mkdir(parents=True)
    (made / "shards" / "manifest.json").write_text("{}")
    overrides = ["shard.masked_lm_prob=0.15", "shard.max_predictions_per_seq=10"]
    config = load_pipeline(recipe, overrides, check_inputs=False).config
    (made / "pipeline.json").write_text(json.dumps(config, default=str))
    args = argparse.Namespace(out=str(tmp_path), recipe=recipe, data_set={})
    assert Bench(args).shards(0.15, {}) == made / "shards"
    edited = tmp_path / "edited.toml"
    [corpus] = config["input"]["paths"]  # the recipe's input as the recipe's folder resolves it
    text = recipe.read_text().replace("vocab_size = 8000", "vocab_size = 9000")
    edited.write_text(text.replace('"../../shared/corpus/enwiki_AA.txt.xz"', json.dumps(corpus)))
    with pytest.raises(SystemExit, match=r"data-mask15: built from other data settings \(vocab.vocab_size\)"):
        Bench(argparse.Namespace(out=str(tmp_path), recipe=edited, data_set={})).shards(0.15, {})
    (made / "pipeline.json").unlink()  # shards of unknown making
    with pytest.raises(SystemExit, match="built from other data settings"):
        Bench(args).shards(0.15, {})


def test_the_table_puts_each_score_beside_its_random_init_and_the_cheap_baselines(tmp_path):
    def seed(upos: float, random: float, dev: float | None = None) -> dict:
        return {"steps": 100, "val_mlm_acc": 0.3, "val_mlm_loss": 4.0,
                "upos": {"split": "test", "pretrained": upos, "random": random, "baseline": 0.8666,
                         "baseline_name": "most frequent tag per word"} | ({"dev": dev} if dev else {})}

    def held_out(acc: float) -> dict:
        return {"steps": 100, "val_mlm_acc": acc, "val_mlm_loss": 4.0}

    results = {"budget": "30m", "speeds_measured": "today", "seeds": [1, 2], "tasks": {"upos": []}, "rows": {
        "recipe": {"change": "the recipe", "masking": 0.15, "data": {}, "scorer": "evaluate",
                   "seeds": {"1": seed(0.90, 0.88, dev=0.93), "2": seed(0.91, 0.89)}},
        "geglu": {"change": "GeGLU", "masking": 0.15, "data": {}, "scorer": "no HF class",
                  "seeds": {"1": held_out(0.35), "2": held_out(0.351)}},
        "cased": {"change": "cased", "masking": 0.3, "data": {"vocab.cased": True}, "scorer": "evaluate",
                  "seeds": {"1": seed(0.95, 0.90, dev=0.92), "2": seed(0.96, 0.91, dev=0.91)}}}}
    table = write(results, tmp_path)
    # chosen on dev, never on test: cased's test scores are higher, the recipe's dev score is
    assert "| recipe | 1 of 2 | 0.9300 | 0.9300 |\n| cased | 2 of 2 | 0.9150 | 0.9150 |" in table
    assert table.endswith("Chosen: recipe, 0.0150 above cased.\n") and results["chosen_on_dev"] == "recipe"
    assert "| upos (test) |" in table and "upos: most frequent tag per word 0.8666." in table
    assert "| recipe | the recipe (masking 15%) | 2 | 100 | 0.3000 [0.3000, 0.3000] | " \
        "0.9050 [0.9000, 0.9100] (random 0.8850) |" in table
    # the held-out accuracy's verdict only against the same masking and data; a task's against the last
    # row scored on it, named where rows between had no score
    assert "| geglu | GeGLU (masking 15%) | 2 | 100 | 0.3505 [0.3500, 0.3510] | no HF class | " \
        "+0.0505 ± 0.0005 helps |  |" in table
    assert "| cased | cased (masking 30%, vocab.cased=true) | 2 | 100 | 0.3000 [0.3000, 0.3000] | " \
        "0.9550 [0.9500, 0.9600] (random 0.9050) |  | +0.0500 ± 0.0071 helps (vs recipe) |" in table
    assert median_range([0.90, 0.99, 0.91]) == "0.9100 [0.9000, 0.9900]"  # the median, not the mean
    del results["rows"]["cased"]["seeds"]["2"]["upos"]  # a seed not evaluated with these flags (yet)
    assert "| 0.9500 (1 seed; random 0.9000; 1 of 2 seeds) |" in write(results, tmp_path)
    del results["rows"]["cased"]["seeds"]["1"]["upos"]
    assert "| cased | cased (masking 30%, vocab.cased=true) | 2 | 100 | 0.3000 [0.3000, 0.3000] | " \
        "not scored yet |" in write(results, tmp_path)
    results["rows"] = {"geglu": results["rows"]["geglu"]}  # nothing fine-tuned yet
    assert "none scored yet" in write(results, tmp_path) and "| upos |" in write(results, tmp_path)
    assert json.loads((tmp_path / "results.json").read_text()) == results


def test_the_recipe_is_chosen_on_the_dev_scores_of_what_it_is_for():
    """UPOS and NER choose (issue 38's goal); GLUE at its floor is reported, never chosen on: a row that is
    worse on both goals is not chosen for one seed's CoLA above 0."""
    from bench.recipe_ablation import on_dev

    def run(upos: float, ner: float, cola: float) -> dict:
        return {task: {"dev": value} for task, value in (("upos", upos), ("ner", ner), ("cola", cola))}

    rows = {"a": {"scorer": "evaluate", "seeds": {1: run(0.93, 0.74, 0.0), 2: run(0.93, 0.75, 0.0)}},
            "b": {"scorer": "evaluate", "seeds": {1: run(0.92, 0.71, 0.05), 2: run(0.92, 0.72, 0.04)}},
            "c": {"scorer": "no HF class", "seeds": {1: {}}}}
    lines, chosen = on_dev(rows, ["upos", "ner", "cola"])
    assert chosen == "a" and lines[-1] == "Chosen: a, 0.0200 above b."
    assert "| row | seeds | upos (dev) | ner (dev) | cola (dev) | average (upos, ner) |" in lines
    assert "| a | 2 of 2 | 0.9300 | 0.7450 | 0.0000 | 0.8375 |" in lines
    assert on_dev(rows, ["cola"])[1] == "b"  # neither goal run: every task chooses
    assert on_dev(rows, []) == ([], None)


def test_a_change_is_judged_by_welchs_t_test_at_95_percent():
    """Beyond 2 standard errors is not 95% with 3 seeds a row: the verdict is Welch's t-test, its degrees of
    freedom rounded down (so never bolder than scipy's exact test, and as bold wherever p < 0.01)."""
    stats = pytest.importorskip("scipy.stats")
    assert verdict([0.62, 0.66, 0.64], [0.60, 0.61, 0.62]) == "+0.0300 ± 0.0129 noise"  # 2.3 SE, p = 0.10
    assert verdict([0.95, 0.96], [0.90, 0.91]).endswith("helps") and verdict([0.9], [0.8, 0.7]) == ""
    assert verdict([0.0] * 3, [0.0] * 3).endswith("noise") and verdict([0.9] * 2, [0.8] * 2).endswith("helps")
    rng = random.Random(7)
    for _ in range(2000):
        n, m, shift = rng.choice([2, 3, 5]), rng.choice([2, 3, 5]), rng.uniform(-0.03, 0.03)
        now = [rng.gauss(0.9 + shift, rng.choice([0.003, 0.01, 0.03])) for _ in range(n)]
        before = [rng.gauss(0.9, rng.choice([0.003, 0.01, 0.03])) for _ in range(m)]
        call, exact = verdict(now, before).split()[-1], stats.ttest_ind(now, before, equal_var=False)
        side = "helps" if exact.statistic > 0 else "hurts"
        assert call in ("noise", side) and (call == "noise" or exact.pvalue < 0.05), (now, before, exact)
        assert exact.pvalue >= 0.01 or call == side, (now, before, exact)


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
    rows = ["--rows", "recipe", "cased"]  # the last row: every change above it, the ramp and the case too
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
    assert set(speeds["rows"]) == {"recipe", "cased"} and speeds["measured"]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert list(results["rows"]) == ["recipe", "cased"]
    assert results["rows"]["recipe"]["masking"] == 0.15 and results["rows"]["cased"]["masking"] == 0.30
    made = Bench(argparse.Namespace(out=str(tmp_path / "out"), recipe=recipe_ablation.RECIPE))
    for name, entry in results["rows"].items():
        assert entry["scorer"] == "evaluate"
        found = entry["seeds"]["12345"]
        values, _ = made.train_settings(BY_NAME[name])  # 5 s at the row's measured speed, as steps
        assert found["steps"] == steps_in(5, speeds["rows"][name]["seq_per_s"], values)
        assert 0 <= found["val_mlm_acc"] <= 1
        assert found["upos"]["split"] == "dev" and 0 < found["upos"]["pretrained"] <= 1
    table = (tmp_path / "out" / "table.md").read_text()
    assert table in run.stdout and "| cased | cased vocab" in table and "upos (dev)" in table
    assert table.count("random 0.") == 2 and "the same for every row: upos: most frequent tag" in table
    for row, full in (("recipe", True), ("cased", False)):  # the ramp reached the trainer
        [metrics] = (tmp_path / "out" / "runs").glob(f"{row}-seed12345-*/metrics.jsonl")
        metrics = metrics.read_text().splitlines()
        batches = [json.loads(line)["seqs_per_step"] for line in metrics if "seqs_per_step" in line]
        assert batches and (min(batches) == 64) is full, (row, batches)
    for data, lowercase in (("data-mask15-*", True), ("data-mask30-*", False)):  # the case reached the vocab
        [tokenizer] = (tmp_path / "out").glob(f"{data}/vocab/tokenizer.json")
        assert json.loads(tokenizer.read_text())["normalizer"]["lowercase"] is lowercase
    records = sorted((tmp_path / "out" / "records").glob("*.json"))
    assert [json.loads(r.read_text())["row"] for r in records] == ["cased", "recipe"]
    import shutil

    for gone in ("runs", "evaluations"):  # another machine: the records alone
        shutil.rmtree(tmp_path / "out" / gone)
    again = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    assert ": pre-training " not in again.stdout and ": evaluating on " not in again.stdout, again.stdout
    assert (tmp_path / "out" / "table.md").read_text() == table


@pytest.mark.parametrize("broken", ["speeds.json", "data-mask15/pipeline.json"])
def test_a_broken_file_of_its_own_is_one_line_naming_it(tmp_path, broken):
    (tmp_path / "data-mask15" / "shards").mkdir(parents=True)
    (tmp_path / "data-mask15" / "shards" / "manifest.json").write_text("{}")
    (tmp_path / "speeds.json").write_text(json.dumps({"rows": {"recipe": {"seq_per_s": 500.0}}}))
    (tmp_path / broken).write_text('{"rows": ')  # cut short, as a killed write leaves it
    command = [sys.executable, "bench/recipe_ablation.py", "--out", str(tmp_path), "run", "--budget", "5s",
               "--rows", "recipe"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and str(tmp_path / broken) in done.stderr
    assert "not valid JSON" in done.stderr


def ledger_bench(out, results, data, monkeypatch, task: str | None = None) -> Bench:
    """A Bench at `out`, a task whose files lie under OUT and DATA (made here), its speeds in `results`."""
    (Path(out) / "data").mkdir(parents=True, exist_ok=True)
    Path(data).mkdir(parents=True, exist_ok=True)
    (Path(out) / "data" / "t.conllu").write_text("1\tA\ta\tX\n\n")
    (Path(data) / "d.conllu").write_text("1\tB\tb\tX\n\n")
    Path(results).mkdir(parents=True, exist_ok=True)
    (Path(results) / "speeds.json").write_text(json.dumps({"rows": {"recipe": {"seq_per_s": 500.0},
                                                                    "mini": {"seq_per_s": 100.0}}}))
    recipe = recipe_ablation.RECIPE
    args = argparse.Namespace(out=str(out), results=str(results), recipe=recipe, data_set={}, budget="5s",
                              eval_extra="--seeds 1", data=str(data), first_seed=1, seeds=1, rows=None,
                              table_only=False, jobs=1,
                              task=[task or f"upos=--train {out}/data/t.conllu --dev {data}/d.conllu"])
    made = Bench(args)
    monkeypatch.setattr(made, "shards", lambda masking, changed: pytest.fail("shards built for a name"))
    return made


def test_runs_and_evaluations_have_the_same_names_on_any_machine(tmp_path, monkeypatch):
    """A run's record is found by its run's name: paths of this machine (OUT, DATA, a symlink to it) must not
    be in it, or the ablation's records would not be found on the next machine; the files' content is."""
    here = ledger_bench(tmp_path / "a" / "out", tmp_path / "results", tmp_path / "a" / "data", monkeypatch)
    there = ledger_bench(tmp_path / "elsewhere" / "out", tmp_path / "results", tmp_path / "b" / "data",
                         monkeypatch)
    (tmp_path / "link").symlink_to(tmp_path / "b" / "data")
    linked = ledger_bench(tmp_path / "c" / "out", tmp_path / "results", tmp_path / "link", monkeypatch,
                          f"upos=--train {tmp_path}/c/out/data/t.conllu --dev {tmp_path}/b/data/d.conllu")
    row = BY_NAME["recipe"]
    (run_here, command), (run_there, _) = here.pretraining(row, 1), there.pretraining(row, 1)
    assert run_here.name == run_there.name == linked.pretraining(row, 1)[0].name
    assert str(here.out) in " ".join(command)
    names = {bench.evaluation(run_here, "upos")[0].name for bench in (here, there, linked)}
    assert len(names) == 1
    (tmp_path / "b" / "data" / "d.conllu").write_text("1\tC\tc\tX\n\n")  # other data, same path
    again = ledger_bench(tmp_path / "elsewhere" / "out", tmp_path / "results", tmp_path / "b" / "data",
                         monkeypatch)
    (tmp_path / "b" / "data" / "d.conllu").write_text("1\tC\tc\tX\n\n")
    assert again.evaluation(run_here, "upos")[0].name not in names
    # a path is replaced where it is whole or starts a longer one, never inside another name
    # (the third is only checked not to be OUT: with the repository right in /tmp, pytest's folder is "..")
    said = json.loads(here.portable([f"{here.out}", f"--x {here.out}/a", f"{here.out}space/b"]))
    assert said[:2] == ["OUT", "--x OUT/a"] and said[2].endswith("/a/outspace/b") and "OUT" not in said[2]


def test_every_committed_record_is_a_run_the_bench_makes_now(tmp_path):
    """The committed table is repeatable with its command: each record's name is the name its row and seed
    give now, at the table's budget (bench/results/recipe_ablation). An edit to a row, to the recipe row 1
    starts from, or to how a run is named would leave records no run finds, and a table no one can repeat."""
    results = REPO / "bench" / "results" / "recipe_ablation"
    records = sorted((results / "records").glob("*.json"))
    assert records, "no committed records"
    bench = Bench(argparse.Namespace(out=str(tmp_path), results=str(results), recipe=recipe_ablation.RECIPE,
                                     data_set={}, budget="30m", task=[]))
    for record in records:
        found = json.loads(record.read_text())
        run_dir, _ = bench.pretraining(BY_NAME[found["row"]], found["seed"])
        assert record.stem == run_dir.name


def test_a_recipe_of_other_data_makes_other_runs(tmp_path, monkeypatch):
    """A run's name holds the recipe's data tables: an edited vocab size is another run, on any machine."""
    bench = ledger_bench(tmp_path / "out", tmp_path / "results", tmp_path / "data", monkeypatch)
    edited = tmp_path / "edited.toml"
    edited.write_text(bench.args.recipe.read_text().replace("vocab_size = 8000", "vocab_size = 9000"))
    other = ledger_bench(tmp_path / "out", tmp_path / "results", tmp_path / "data", monkeypatch)
    other.args.recipe = edited
    other.recipe = recipe_ablation.read_toml(edited, "recipe")
    row = BY_NAME["recipe"]
    assert bench.pretraining(row, 1)[0].name != other.pretraining(row, 1)[0].name


def test_a_recorded_run_is_never_run_again_even_where_its_files_are_gone(tmp_path, monkeypatch):
    bench = ledger_bench(tmp_path / "out", tmp_path / "results", tmp_path / "data", monkeypatch)
    done, weights = [], ["w1"]
    monkeypatch.setattr(Bench, "pretrain", lambda self, row, seed: done.append("pretrain") or tmp_path)
    monkeypatch.setattr(recipe_ablation, "weights_digest", lambda run_dir: weights[0])
    monkeypatch.setattr(recipe_ablation, "held_out", lambda run_dir: {"steps": 40, "val_mlm_loss": 5.0,
                                                                       "val_mlm_acc": 0.2})
    score = {"splits": {"dev": {"pretrained": {"mean": 0.9}, "random": {"mean": 0.8}, "baseline": 0.7}},
             "baseline_name": "most frequent tag per word"}
    monkeypatch.setattr(Bench, "evaluate", lambda self, run, task: done.append(task) or score)
    row = BY_NAME["recipe"]
    first = bench.scored(row, 1, "evaluate")
    assert done == ["pretrain", "upos"] and first["upos"]["pretrained"] == 0.9 and first["val_mlm_acc"] == 0.2
    done.clear()  # another machine: nothing under OUT, the records committed
    elsewhere = ledger_bench(tmp_path / "new" / "out", tmp_path / "results", tmp_path / "data", monkeypatch)
    assert elsewhere.scored(row, 1, "evaluate") == first and done == []
    elsewhere.args.eval_extra = "--seeds 3"  # other fine-tuning settings: evaluated again, the first kept
    del elsewhere.__dict__["tasks"], elsewhere.__dict__["inputs"]
    assert elsewhere.scored(row, 1, "evaluate")["upos"]["task"] == "upos" and done == ["pretrain", "upos"]
    record = json.loads(elsewhere.record_path(row, 1).read_text())
    assert len(record["evaluations"]) == 2 and record["model"] == "w1"
    done.clear()
    weights[0] = "w2"  # made again elsewhere, other weights: a new record, not scores of two models
    elsewhere.args.eval_extra = "--seeds 2"
    del elsewhere.__dict__["tasks"], elsewhere.__dict__["inputs"]
    elsewhere.scored(row, 1, "evaluate")
    record = json.loads(elsewhere.record_path(row, 1).read_text())
    assert len(record["evaluations"]) == 1 and record["model"] == "w2" and done == ["pretrain", "upos"]


def test_a_runs_evaluations_go_jobs_at_a_time_each_recorded(tmp_path, monkeypatch):
    """--jobs 2: two tasks' evaluations at once (each waits for the other at a barrier: one at a time would
    time out), both in the record."""
    second = "ner=--train {0}/data/t.conllu --dev {1}/d.conllu --task ner"
    bench = ledger_bench(tmp_path / "out", tmp_path / "results", tmp_path / "data", monkeypatch)
    bench.args.task.append(second.format(tmp_path / "out", tmp_path / "data"))
    bench.args.jobs = 2
    monkeypatch.setattr(Bench, "pretrain", lambda self, row, seed: tmp_path)
    monkeypatch.setattr(recipe_ablation, "weights_digest", lambda run_dir: "w")
    monkeypatch.setattr(recipe_ablation, "held_out", lambda run_dir: {"steps": 40, "val_mlm_loss": 5.0,
                                                                       "val_mlm_acc": 0.2})
    together = threading.Barrier(2, timeout=10)

    def evaluate(self, run, task):
        together.wait()
        value = 0.9 if task == "upos" else 0.5
        return {"splits": {"dev": {"pretrained": {"mean": value}, "random": {"mean": 0.1}, "baseline": 0.0}},
                "baseline_name": "cheap"}

    monkeypatch.setattr(Bench, "evaluate", evaluate)
    found = bench.scored(BY_NAME["recipe"], 1, "evaluate")
    assert found["upos"]["pretrained"] == 0.9 and found["ner"]["pretrained"] == 0.5
    record = json.loads(bench.record_path(BY_NAME["recipe"], 1).read_text())
    assert sorted(e["task"] for e in record["evaluations"].values()) == ["ner", "upos"]
    machines = [record["machine"], *(e["machine"] for e in record["evaluations"].values())]
    assert len(set(machines)) == 1 and "(" in machines[0]  # the CPU and torch's kernels, e.g. (AVX2)


def test_the_table_holds_every_recorded_row_whichever_rows_a_call_ran(tmp_path, monkeypatch):
    """`run --rows mini` into the committed results must not drop the recipe's recorded row from the table."""
    bench = ledger_bench(tmp_path / "out", tmp_path / "results", tmp_path / "data", monkeypatch)
    monkeypatch.setattr(Bench, "scorer", lambda self, values: "evaluate")
    monkeypatch.setattr(Bench, "pretrain", lambda self, row, seed: tmp_path)
    monkeypatch.setattr(recipe_ablation, "weights_digest", lambda run_dir: "w")
    monkeypatch.setattr(recipe_ablation, "held_out", lambda run_dir: {"steps": 40, "val_mlm_loss": 5.0,
                                                                       "val_mlm_acc": 0.2})
    score = {"splits": {"dev": {"pretrained": {"mean": 0.9}, "random": {"mean": 0.8}, "baseline": 0.7}},
             "baseline_name": "most frequent tag per word"}
    monkeypatch.setattr(Bench, "evaluate", lambda self, run, task: score)
    monkeypatch.setattr(recipe_ablation, "Bench", lambda args: bench)
    bench.args.rows, bench.args.table_only = ["recipe"], False
    bench.args.task.insert(0, bench.args.task[0].replace("upos=", "zeta="))  # the table keeps --task's order
    recipe_ablation.run_rows(bench.args)
    bench.args.rows = ["mini"]
    table = recipe_ablation.run_rows(bench.args) == 0 and (tmp_path / "results" / "table.md").read_text()
    assert "| recipe |" in table and "| mini |" in table and "| pre-ln |" not in table
    assert "| zeta (dev) | upos (dev) |" in table
    assert list(json.loads((tmp_path / "results" / "results.json").read_text())["rows"]) == ["recipe", "mini"]
    (tmp_path / "results" / "table.md").unlink()
    monkeypatch.setattr(Bench, "scored", lambda self, row, seed, scorer: pytest.fail("ran"))
    bench.args.rows, bench.args.table_only = ["pre-ln"], True  # the table alone, whatever --rows says
    assert recipe_ablation.run_rows(bench.args) == 0
    assert (tmp_path / "results" / "table.md").read_text() == table
    bench.results = tmp_path / "mistyped"  # --results naming no records: one line, not an empty table
    with pytest.raises(recipe_ablation.UsageError, match="mistyped/records: no record of these seeds"):
        recipe_ablation.run_rows(bench.args)
    assert not bench.results.exists()


def test_a_record_is_read_as_untrusted_every_mutation_refused_in_one_line_or_tabulated(tmp_path):
    """Records come from other machines and sessions: any mutation of one is refused in one DataError naming
    the file, or read and tabulated; never another exception."""
    import random

    from bench.recipe_ablation import found_in, read_record
    from corpusprep.errors import DataError

    good = {"row": "recipe", "seed": 1, "model": "ab12",
            "held_out": {"steps": 40, "val_mlm_loss": 5.0, "val_mlm_acc": 0.2},
            "evaluations": {"e1": {"task": "upos", "split": "dev", "pretrained": 0.9, "random": 0.8,
                                   "baseline": 0.7, "baseline_name": "most frequent", "dev": 0.91}}}
    path = tmp_path / "records" / "run.json"
    path.parent.mkdir()
    text = json.dumps(good)
    path.write_text(text)
    assert read_record(path, "recipe", 1) == good
    with pytest.raises(DataError, match="the record of recipe seed 1, not of mini seed 1"):
        read_record(path, "mini", 1)  # another run's record under this run's name
    rng = random.Random(38)
    values = [None, True, "x", "a|b", "two\nlines", 3, -2.5, 10**400, 1e300, float("nan"), float("inf"), [],
              {}, "recipe", 1]
    refused = 0
    for _ in range(600):
        record = json.loads(text)
        node = record
        for _ in range(rng.randint(0, 2)):  # walk into a nested object, then break one field of it
            inner = [key for key, value in node.items() if isinstance(value, dict)]
            node = node[rng.choice(inner)] if inner else node
        key = rng.choice(list(node))
        if rng.random() < 0.3:
            del node[key]
        else:
            node[key] = rng.choice(values)
        cut = rng.random() < 0.1
        path.write_text(text[: rng.randrange(len(text))] if cut else json.dumps(record))
        try:
            read = read_record(path, "recipe", 1)
        except DataError as error:
            assert str(error).startswith(str(path)) and "\n" not in str(error)
            refused += 1
            continue
        names = {score["task"]: name for name, score in read["evaluations"].items()}
        results = {"budget": "30m", "speeds_measured": "today", "seeds": [1], "tasks": {"upos": []},
                   "rows": {"recipe": {"change": "c", "masking": 0.15, "data": {}, "scorer": "evaluate",
                                       "seeds": {1: found_in(read, names)}}}}
        table = write(results, tmp_path / "table")
        tables = [part for part in table.split("\n\n") if part.startswith("|")]  # the scores', the choice's
        assert all(line.startswith("|") for part in tables for line in part.strip().splitlines()), table
    assert refused > 400  # almost every mutation breaks a field the table reads
