"""Seeded fuzz of every JSON record corpusprep reads back: artifact manifests, build records and task markers,
the shards' manifest, the pairs' stats, the vocab's report, a checkpoint's config.json, trainer.json and its
tensor files' headers, a pipeline's run and stage records, a `sentences` output's record. Each round damages
one (a wrong type, a missing or extra key, a huge number, deep nesting, an absolute or `..` name, a symbolic
link, a FIFO, cut short; half the time with its checksum in the owning manifest rewritten to match, so the
content itself reaches the loader) and runs the commands that read it, in this process: each ends in a clean
run or one line with exit 1 or 2, never a traceback, and no file outside the damaged output changes.

CORPUSPREP_FUZZ_ROUNDS (default 24) and CORPUSPREP_FUZZ_SEED (default 0) run more rounds or others by hand:
    CORPUSPREP_FUZZ_ROUNDS=500 CORPUSPREP_FUZZ_SEED=1 pytest tests/security/test_fuzz_records.py
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import random
import shutil
import signal
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from corpusprep.engine.files import write_json
from tests.security.trust_world import (
    World,
    copy,
    corpusprep,
    pipeline,
    pipeline_args,
    train_args,
    trainer_export,
    trainer_run,
    tree_digest,
    world,
)

ROUNDS = int(os.environ.get("CORPUSPREP_FUZZ_ROUNDS", "24"))
SEED = int(os.environ.get("CORPUSPREP_FUZZ_SEED", "0"))
STEP = "checkpoints/step-0000002"


# ------------------------------------------------------------------------------------------- the targets


def pairs_args(w: World, out: Path) -> list:
    """build-pairs as the world's pairs were built (a rerun is up to date)."""
    return ["build-pairs", w.text, "--vocab", w.vocab, "-o", out, "--max-seq-length", "64", "--dupe-factor",
            "1", "--validation-fraction", "0.2", "--seed", "0", "--workers", "1",
            "--no-progress"]


def shard_args(w: World, pairs: Path, out: Path, vocab: Path | None = None) -> list:
    return ["shard", pairs, "--vocab", vocab or w.vocab, "-o", out, "--num-shards", "2", "--row-group-size",
            "256", "--seed", "0", "--workers", "1", "--no-progress"]


def unfinished(pairs: Path) -> Path:
    """The pairs directory as a killed build-pairs leaves it: its build record and the markers of the tasks
    that finished, no manifest (what Artifact._restore makes of a finished one)."""
    manifest = json.loads((pairs / "artifact.json").read_text())
    write_json(pairs / ".work" / "run.json", {"fingerprint": manifest["fingerprint"],
                                              "identity": manifest["identity"], "foreign": []})
    for task, record in manifest["tasks"].items():
        write_json(pairs / ".work" / "markers" / f"{task}.done.json", record)
    (pairs / "artifact.json").unlink()
    return pairs


# name -> (the world's output to copy, how to prepare the copy, records in it, commands reading them)
Commands = Callable[[World, Path, Path], list]
TARGETS: dict[str, tuple[str, Callable[[Path], Path] | None, list[str], Commands]] = {
    "vocab": ("vocab", None, ["artifact.json", "vocab_report.json"], lambda w, out, r: [
        ["vocab", w.text, "-o", out, "--vocab-size", "800"], ["validate", out],
        shard_args(w, w.pairs, r / "new-shards", out)]),
    "pairs": ("pairs", None, ["artifact.json", "stats.json"], lambda w, out, r: [
        pairs_args(w, out), ["validate", out], shard_args(w, out, r / "new-shards")]),
    "unfinished-pairs": ("pairs", unfinished, [".work/run.json", ".work/markers/*.done.json"],
                         lambda w, out, r: [pairs_args(w, out)]),
    "shards": ("shards", None, ["artifact.json", "manifest.json"], lambda w, out, r: [
        ["validate", out], ["stats", out], ["inspect", out, "-n", "1"], shard_args(w, w.pairs, out),
        ("train", *train_args(out, r / "new-run", 1))]),
    "checkpoint": ("run", None, [f"{STEP}/config.json", f"{STEP}/trainer.json", f"{STEP}/weights.safetensors",
                                 f"{STEP}/trainer.safetensors"], lambda w, out, r: [
        ("train", *train_args(w.shards, out, 3), "--resume"), ["validate", out],
        ("export", out, r / "hf", "--vocab", w.vocab),
        ("train", *train_args(w.shards, r / "new-run", 1), "--init-from", out)]),
    "pipeline": ("pipeline", None, ["run.json", "stages/*.done.json", "stages/*.started.json",
                                    "vocab/artifact.json", "shards/manifest.json",
                                    f"train/{STEP}/trainer.json"],
                 lambda w, out, r: [pipeline_args(out, w.text, "--until", "train"), ["validate", out]]),
    "sentences": ("sentences", None, [".sentences.txt.done.json"], lambda w, out, r: [
        ["sentences", w.text, "-o", out / "sentences.txt"]]),
}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    w = world(tmp_path_factory)
    sentences = w.root / "sentences"
    if not sentences.exists():
        sentences.mkdir()
        assert corpusprep("sentences", w.text, "-o", sentences / "sentences.txt").code == 0
    return {"world": w, "vocab": w.vocab, "pairs": w.pairs, "shards": w.shards, "run": w.run,
            "pipeline": pipeline(tmp_path_factory, w), "sentences": sentences}


# ------------------------------------------------------------------------------------------- the damage

VICTIM = "victim.txt"  # beside the damaged output: `../victim.txt` names it
DEEP = "<deep>"  # a value replaced by nesting thousands of levels deep when the record is written


def dumps(record, rng: random.Random) -> str:
    depth = rng.choice([70, 5000])
    return json.dumps(record).replace(json.dumps(DEEP), "[" * depth + "0" + "]" * depth)


def names_like_files(value, path=()):
    """(path, key or None) of every dict key or string that reads like a file name inside an output."""
    if isinstance(value, dict):
        for k, v in value.items():
            if "/" in k or "." in k:
                yield path, k
            yield from names_like_files(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from names_like_files(v, (*path, i))
    elif isinstance(value, str) and ("/" in value or value.endswith((".parquet", ".json", ".txt"))):
        yield path, None


def containers(value, path=()):
    """(path, container) of every dict and list in `value`."""
    if isinstance(value, (dict, list)):
        yield path, value
        for k, v in value.items() if isinstance(value, dict) else enumerate(value):
            yield from containers(v, (*path, k))


def mutate_json(record, rng: random.Random, victim: Path):
    """One structural damage to a parsed record; returns (record, what was done)."""
    places = [(p, c) for p, c in containers(record) if c]
    op = rng.choice(["type", "missing", "extra", "huge", "deep", "name", "name", "value"])
    if op == "name" and (found := list(names_like_files(record))):
        path, key = rng.choice(found)
        bad = rng.choice(["../" + VICTIM, str(victim), "a/../../" + VICTIM, "", "./x", "train//x"])
        node = record
        for k in path[:-1] if key is None else path:
            node = node[k]
        if key is None:
            node[path[-1]] = bad
        else:
            node[bad] = node.pop(key)
        return record, f"name {'/'.join(map(str, path))} -> {bad!r}"
    if not places:
        return rng.choice([[], "x", 7, None]), "the whole record replaced"
    path, node = rng.choice(places)
    key = rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
    where = "/".join(map(str, (*path, key)))
    if op == "missing" and isinstance(node, dict):
        del node[key]
        return record, f"missing {where}"
    if op == "extra" and isinstance(node, dict):
        node["zz_extra"] = rng.choice([1, "x", None, [1], {"a": 1}])
        return record, f"extra key in {'/'.join(map(str, path))}"
    if op == "huge":
        node[key] = rng.choice([2**64, -(2**63) - 1, 10**300, 1e308, float("inf"), float("nan")])
        return record, f"huge {where}"
    if op == "value":  # of the right type, out of what a run writes (ADV-22: a position of 10^17 rows,
        # betas of 1, a negative step, amsgrad on, 10^10 layers): the records pass it, the checks using it not
        node[key] = rng.choice([-1.0, 0, 1.0, 10**17, 10**10, [1.0, 1.0], True, 64])
        return record, f"value {where} -> {node[key]!r}"
    if op == "deep":  # written as text by `dumps` (json.dumps itself would recurse too deep)
        node[key] = DEEP
        return record, f"deep {where}"
    node[key] = rng.choice(["x", "", -1, 0, 1.5, True, None, [], {}, [1, "a"], {"a": "b"}, 2**31])
    return record, f"type {where} -> {node[key]!r}"


def damage(file: Path, rng: random.Random, victim: Path, outside_dir: Path) -> str:
    """Damage one record file (or replace it by a link, a FIFO, cut it short); returns what was done."""
    raw = rng.random()
    if raw < 0.06:
        file.unlink()
        file.symlink_to(victim)
        return "a link to a file outside"
    if raw < 0.09:
        file.unlink()
        os.mkfifo(file)
        return "a FIFO"
    if raw < 0.13:
        data = file.read_bytes()
        file.write_bytes(data[: rng.randrange(len(data) + 1)])
        return "cut short"
    if raw < 0.16 and file.parent.name not in ("markers", "stages"):
        target = outside_dir / f"linked-{len(list(outside_dir.iterdir()))}-{file.parent.name}"
        copy(file.parent, target)
        for child in list(file.parent.iterdir()):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        file.parent.rmdir()
        file.parent.symlink_to(target)
        return f"its folder a link to {target.name} outside"
    if file.name == "trainer.safetensors" and rng.random() < 0.5:  # a tensor's values, its header intact
        tensors = load_file(str(file))
        name = rng.choice(sorted(tensors))
        tensor = tensors[name]
        nan = torch.full_like(tensor, math.nan) if tensor.is_floating_point() else torch.tensor(-1)
        bad = rng.choice([torch.tensor(True), torch.tensor(-1.0), nan])
        save_file(tensors | {name: bad}, str(file))
        return f"tensor {name} -> {bad.dtype} {tuple(bad.shape)}"
    if file.suffix == ".safetensors":
        data = file.read_bytes()
        length = int.from_bytes(data[:8], "little")
        header, description = mutate_json(json.loads(data[8 : 8 + length]), rng, victim)
        text = dumps(header, rng).encode()
        file.write_bytes(len(text).to_bytes(8, "little") + text + data[8 + length :])
        return f"header: {description}"
    record, description = mutate_json(json.loads(file.read_text()), rng, victim)
    file.write_text(dumps(record, rng))
    return description


def cover_tracks(output: Path, file: Path) -> None:
    """Record the damaged file's new size and sha256 where its owner keeps them (the artifact manifest, a
    checkpoint's config.json), as a careful attacker would: only the content can then be caught."""
    if not file.is_file() or file.is_symlink():
        return
    content = file.read_bytes()
    entry = {"size": len(content), "sha256": hashlib.sha256(content).hexdigest()}
    for owner in (file.parent / "config.json", *(p / "artifact.json" for p in [file.parent, *file.parents])):
        if owner != file and owner.is_file() and not owner.is_symlink() and output in [owner, *owner.parents]:
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                record = json.loads(owner.read_text())
                name = file.relative_to(owner.parent).as_posix()
                if name in record["files"]:
                    record["files"][name] = entry
                    write_json(owner, record)
                    return


# ------------------------------------------------------------------------------------------- running


@contextlib.contextmanager
def alarm(seconds: int, what: str):
    """A command that hangs (a FIFO read) fails the test instead of stopping it."""

    def hung(*_):
        raise TimeoutError(f"{what}: still running after {seconds} s")

    before = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def run(args) -> object:
    if args[0] == "train":
        return trainer_run(*args[1:])
    if args[0] == "export":
        return trainer_export(*args[1:])
    return corpusprep(*args)


@pytest.mark.slow  # ~6.0 s idle
def test_damaged_records_end_in_a_clean_run_or_one_line(outputs, tmp_path):
    rng = random.Random(SEED)
    w = outputs["world"]
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "abs-victim.txt"
    victim.write_text("outside every output\n")
    guarded_trees = [w.root, outputs["pipeline"].parent, outside]
    names = sorted(TARGETS)
    for round_ in range(ROUNDS):
        name = names[round_ % len(names)] if round_ < len(names) else rng.choice(names)
        source, prepare, patterns, commands = TARGETS[name]
        here = tmp_path / f"r{round_}"
        here.mkdir()
        (here / VICTIM).write_text("beside the output\n")
        out = copy(outputs[source], here / source)
        if prepare:
            prepare(out)
        candidates = sorted(p for pattern in patterns for p in out.glob(pattern) if p.is_file())
        file = rng.choice(candidates)
        what = damage(file, rng, victim, outside)
        if rng.random() < 0.5:
            cover_tracks(out, file)
        label = f"round {round_} (seed {SEED}): {name} {file.relative_to(out)}: {what}"
        before = {str(t): tree_digest(t) for t in guarded_trees} | {VICTIM: (here / VICTIM).read_text()}
        for args in commands(w, out, here):
            try:
                with alarm(300, label):
                    result = run(args)
            except BaseException:  # a traceback: the bug, with the round that found it
                pytest.fail(f"{label}: {' '.join(map(str, args[:2]))} raised\n{traceback.format_exc()}")
            assert result.code in (0, 1, 2), (label, args[:2], result.code, result.err[-3000:])
            assert "Traceback" not in result.err, (label, args[:2], result.err[-3000:])
            if result.code:
                errors = [line for line in result.err.splitlines() if "error: " in line]
                assert len(errors) == 1 and errors[0] == result.line, (label, args[:2], result.err[-3000:])
        after = {str(t): tree_digest(t) for t in guarded_trees} | {VICTIM: (here / VICTIM).read_text()}
        assert after == before, f"{label}: a file outside the output changed"
