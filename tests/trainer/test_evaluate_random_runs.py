"""`--random-runs DIR`: the random init's runs kept and reused by evaluations of other checkpoints of the
same architecture, with the same numbers as a run made again; a damaged store entry is said and made again,
never trusted, never followed outside its directory."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import shutil
from pathlib import Path

import pytest

from corpusprep.errors import UsageError
from tests.interop.helpers import one_thread
from tests.trainer.evaluate_helpers import (
    fast_settings,
    stand_in_run,
    write_run,
    write_toy_task,
    write_toy_vocab,
)
from trainer.evaluate import compare, finetune
from trainer.evaluate.random_runs import RECORD, STORED_NAME


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("toy")
    train, dev = write_toy_task(root)
    vocab = write_toy_vocab(root / "vocab")
    runs = [write_run(root / f"run{seed}", vocab, seed=seed, step=20 + seed) for seed in (0, 1)]
    return {"root": root, "train": train, "dev": dev, "vocab": vocab, "runs": runs}


@pytest.fixture
def calls(monkeypatch) -> list:
    """finetune.run replaced by a stand-in that says which runs were made; random scores 0.8 + seed/1000."""
    made = []

    def run(hf_dir, data, settings, init, seed):
        made.append((init, seed))
        return stand_in_run(data, settings, (0.9 if init == "pretrained" else 0.8) + (seed - 12345) / 1000)

    monkeypatch.setattr(finetune, "run", run)
    return made


def evaluate(toy, tmp_path: Path, run: int, out: str, store: Path | None, **overrides) -> dict:
    files = {"train": toy["train"], "dev": toy["dev"], "vocab": toy["vocab"]} | overrides
    settings = fast_settings(**files)
    return compare.evaluate(toy["runs"][run], settings, tmp_path / out, workers=1, random_runs=store)


def test_another_checkpoint_reuses_the_random_runs(toy, tmp_path, calls, capsys):
    store = tmp_path / "store"
    first = evaluate(toy, tmp_path, 0, "first", store)
    assert calls == [("pretrained", 12345), ("random", 12345), ("pretrained", 12346), ("random", 12346)]
    assert len(list(store.iterdir())) == 2
    calls.clear()
    second = evaluate(toy, tmp_path, 1, "second", store)  # other weights, the same architecture and vocab
    assert calls == [("pretrained", 12345), ("pretrained", 12346)]
    assert "random     seed 12346: reused from" in capsys.readouterr().err
    assert second["splits"]["dev"]["random"] == first["splits"]["dev"]["random"]
    reused = [r for r in second["runs"] if r["init"] == "random"]
    assert sorted(r["reused"] for r in reused) == sorted(p.name for p in store.iterdir())
    for name in ("random-seed12345-dev.jsonl", "random-seed12346-dev.jsonl"):
        assert (tmp_path / "second" / "predictions" / name).read_bytes() == \
            (tmp_path / "first" / "predictions" / name).read_bytes()
    calls.clear()
    evaluate(toy, tmp_path, 1, "third", store, seeds=3)  # one more seed: only its random run is made
    assert calls == [("pretrained", 12345), ("pretrained", 12346), ("pretrained", 12347), ("random", 12347)]


@pytest.mark.parametrize("change", ["epochs", "data", "vocab"])
def test_anything_a_random_run_is_made_of_is_another_entry(toy, tmp_path, calls, change):
    store = tmp_path / "store"
    evaluate(toy, tmp_path, 0, "first", store)
    overrides = {}
    if change == "epochs":
        overrides["epochs"] = 3.0
    if change == "data":  # the same path, other content
        overrides["dev"] = str(tmp_path / "dev.conllu")
        shutil.copy(toy["dev"], tmp_path / "dev.conllu")
    calls.clear()
    if change == "data":
        evaluate(toy, tmp_path, 1, "same", store, **overrides)
        assert ("random", 12345) not in calls  # a copy of the same bytes: the same entry
        (tmp_path / "dev.conllu").write_text(toy["dev"].read_text().replace("cat", "dog"))
        calls.clear()
    if change == "vocab":
        vocab = write_toy_vocab(tmp_path / "vocab")
        (vocab / "vocab.txt").write_text((vocab / "vocab.txt").read_text() + "zebra\n")
        toy = toy | {"runs": [toy["runs"][0], write_run(tmp_path / "run", vocab, seed=1)], "vocab": vocab}
    evaluate(toy, tmp_path, 1, "second", store, **overrides)
    assert ("random", 12345) in calls and ("random", 12346) in calls


def test_damaged_entries_are_said_and_made_again(toy, tmp_path, calls, capsys):
    """Random faults in the store's records and files (a field changed or dropped, a cut file, a name that
    leads outside, a link to a file outside, a file gone or edited): each evaluation either reuses an entry
    that reads back whole, or says why not in one line and fine-tunes again; never a traceback, never a byte
    read from outside."""
    store = tmp_path / "store"
    evaluate(toy, tmp_path, 0, "first", store, seeds=1)
    entry = next(store.iterdir())
    pristine = {p.relative_to(entry): p.read_bytes() for p in entry.rglob("*") if p.is_file()}
    secret = tmp_path / "secret.jsonl"
    secret.write_text("not a prediction\n")
    rng = random.Random(7)
    outcomes = {"reused": 0, "made again": 0}
    for trial in range(80):
        shutil.rmtree(entry)
        for name, data in pristine.items():
            (entry / name).parent.mkdir(parents=True, exist_ok=True)
            (entry / name).write_bytes(data)
        damage(entry, rng, secret)
        calls.clear()
        capsys.readouterr()
        result = evaluate(toy, tmp_path, 1, f"eval{trial}", store, seeds=1)
        err = capsys.readouterr().err
        if ("random", 12345) in calls:
            outcomes["made again"] += 1
            said = [line for line in err.splitlines() if "random runs:" in line]
            assert len(said) == 1 and "Traceback" not in err, err
            assert json.loads((entry / RECORD).read_text())["record"]["seed"] == 12345  # replaced, whole
        else:
            outcomes["reused"] += 1
            assert result["splits"]["dev"]["random"]["scores"] == [0.8]
        written = [p.read_bytes() for p in (tmp_path / f"eval{trial}").rglob("*") if p.is_file()]
        assert not any(b"not a prediction" in data for data in written)
    assert outcomes["made again"] >= 40 and outcomes["reused"] >= 3, outcomes


def damage(entry: Path, rng: random.Random, secret: Path) -> None:
    record_path = entry / RECORD
    stored = json.loads(record_path.read_text())
    [(name, listed)] = stored["files"].items()
    fault = rng.choice(["field", "drop", "cut", "outside", "link", "gone", "edited", "seed", "made_of",
                        "none"])
    if fault == "field":
        key = rng.choice(["init", "seed", "threads", "seconds", "scores", "config"])
        stored["record"][key] = rng.choice([None, "x", -1, 1e400 if key == "seconds" else 2**70, [], {}])
    elif fault == "drop":
        stored["record"].pop(rng.choice(["init", "seed", "scores", "threads"]))
    elif fault == "cut":
        text = record_path.read_text()
        record_path.write_text(text[: rng.randrange(len(text))])
        return
    elif fault == "outside":
        other = rng.choice([f"../../{secret.name}", "predictions/{run}-dev.jsonl/../../x", str(secret),
                            "predictions/{run}-../x.jsonl", "predictions/{run}-dev"])
        stored["files"] = {other: listed}
    elif fault == "link":  # the listed name, a link to a file outside with its size and digest
        (entry / name).unlink()
        (entry / name).symlink_to(secret)
        stored["files"][name] = {"size": secret.stat().st_size,
                                 "sha256": hashlib.sha256(secret.read_bytes()).hexdigest()}
    elif fault == "gone":
        (entry / name).unlink()
    elif fault == "edited":
        (entry / name).write_bytes((entry / name).read_bytes()[: rng.randrange(listed["size"])])
    elif fault == "seed":
        stored["record"]["seed"] = 12346
    elif fault == "made_of":
        stored["made_of"]["threads"] = 2
    record_path.write_text(json.dumps(stored, default=str))


@pytest.mark.parametrize("name", ["predictions/{run}-dev.jsonl", "predictions/{run}-test.predictions.json",
                                  "predictions/{run}-dev.null-odds.json"])
def test_every_predictions_file_a_task_kind_writes_may_be_stored(name):
    assert STORED_NAME.fullmatch(name)


def test_two_evaluations_may_share_a_store(toy, tmp_path, monkeypatch):
    """Two evaluations (two processes) fine-tune the same random run at once, meeting at a barrier inside
    it, and both keep it: each finishes, and a third evaluation reuses the entry."""
    together = multiprocessing.get_context("fork").Barrier(2, timeout=30)

    def run(hf_dir, data, settings, init, seed):
        if init == "random":
            together.wait()
        return stand_in_run(data, settings, 0.8 if init == "random" else 0.9)

    def one(i: int) -> None:
        try:
            result = evaluate(toy, tmp_path, i, f"at-once{i}", store, seeds=1)
            os._exit(0 if result["splits"]["dev"]["random"]["scores"] == [0.8] else 3)
        except BaseException:
            os._exit(1)

    monkeypatch.setattr(finetune, "run", run)
    store = tmp_path / "store"
    workers = [multiprocessing.get_context("fork").Process(target=one, args=(i,)) for i in (0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    made = []
    monkeypatch.setattr(finetune, "run", lambda hf_dir, data, settings, init, seed: made.append(init) or
                        stand_in_run(data, settings, 0.9))
    assert evaluate(toy, tmp_path, 1, "after", store, seeds=1)["splits"]["dev"]["random"]["scores"] == [0.8]
    assert made == ["pretrained"]


def test_a_store_that_cannot_be_one_is_one_line(toy, tmp_path, calls):
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match=r"file: not a directory \(--random-runs\)"):
        evaluate(toy, tmp_path, 0, "out", tmp_path / "file", seeds=1)
    assert calls == []


@pytest.mark.slow  # ~20 CPU-s: 3 real fine-tuning runs
def test_a_reused_run_is_the_run_made_again(toy, tmp_path):
    """Real fine-tuning: the random run copied from the store scores what the same run made again does."""
    store = tmp_path / "store"
    with one_thread():
        evaluate(toy, tmp_path, 0, "first", store, seeds=1, epochs=1.0)
        reused = evaluate(toy, tmp_path, 1, "reused", store, seeds=1, epochs=1.0)
        made = evaluate(toy, tmp_path, 1, "made", None, seeds=1, epochs=1.0)
    assert reused["run_count"] == made["run_count"] == 2
    assert [r.get("reused") is not None for r in reused["runs"]] == [False, True]
    assert reused["splits"] == made["splits"]
    assert (tmp_path / "reused/predictions/random-seed12345-dev.jsonl").read_bytes() == \
        (tmp_path / "made/predictions/random-seed12345-dev.jsonl").read_bytes()
