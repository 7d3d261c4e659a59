"""The one registry of output kinds (`corpusprep.engine.outputs`): each kind is recognised by its manifest or
its signs, checked by the validator it names, and the engine depends on no producer to do it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from corpusprep.engine.artifact import Artifact
from corpusprep.engine.outputs import OUTPUT_KINDS, kind_of, recognise, validate
from corpusprep.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_every_kind_names_a_validator_it_can_import():
    for kind in OUTPUT_KINDS.values():
        module, function = kind.validator.split(":")
        assert callable(getattr(importlib.import_module(module), function)), kind.name


def _make(directory: Path, names: list[str]) -> Path:
    for name in names:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/"):
            path.mkdir(exist_ok=True)
        else:
            path.write_bytes(b"x")
    return directory


@pytest.mark.parametrize(("names", "loose", "strict"), [
    (["stages/", "run.json"], "pipeline", "pipeline"),
    (["pipeline.json"], "pipeline", None),  # the runner's record alone: no other command writes here
    (["checkpoints/step-0000002/weights.safetensors", "metrics.jsonl"], "train", "train"),
    (["checkpoints/"], "train", None),  # a user's folder named checkpoints: no training run above an output
    (["config.json", "weights.safetensors"], "checkpoint", "checkpoint"),
    (["config.json", "model.safetensors", "vocab.txt"], "export", "export"),
    (["vocab.txt", "stats.json", "train/"], None, None),  # artifacts: by their manifest only
])
def test_signs_recognise_the_outputs_that_are_not_artifacts(tmp_path, names, loose, strict):
    directory = _make(tmp_path / "d", names)
    found, found_strict = recognise(directory), recognise(directory, strict=True)
    assert (found and found.name, found_strict and found_strict.name) == (loose, strict)


def test_a_checkpoint_counts_as_the_train_kind(tmp_path):
    """A pipeline's train stage (an artifact of kind "train") may resume over a checkpoint's files."""
    found = recognise(_make(tmp_path / "d", ["weights.safetensors"]))
    assert (found.kind, found.what) == ("train", "a model checkpoint")


def test_validate_goes_by_the_manifest_then_the_signs(tmp_path):
    corpus = tmp_path / "corpus"
    with Artifact(corpus, "corpus", {"settings": {}}, quiet=True) as art:
        (corpus / "demo.jsonl").write_text('{"text": "a"}\n')
        art.commit(files=["demo.jsonl"])
    (corpus / "vocab.txt").write_text("a sign of a vocab, and no vocab: the manifest decides\n")
    assert kind_of(corpus).name == "corpus"
    assert validate(corpus) == ("demo corpus directory", [], "")
    (corpus / "demo.jsonl").write_text('{"text": "b"}\n')  # same size, other bytes
    assert validate(corpus)[1] == ["demo.jsonl: content differs from the manifest (sha256)"]
    with pytest.raises(InputError, match="not a corpusprep output"):
        validate(_make(tmp_path / "other", ["notes.txt"]))


# The stage packages and the trainer the engine must not import (it would load them for every command,
# and a kind would need an engine edit); corpusprep.read: artifact.py re-exports read.inputs.input_files
# for the drivers' files that still import it from there.
PRODUCERS = ("trainer", "pipelines", "corpusprep.pair", "corpusprep.shard", "corpusprep.tokenize",
             "corpusprep.split", "corpusprep.cli", "corpusprep.validate", "corpusprep.read")
ALLOWED = {("corpusprep/engine/artifact.py", "corpusprep.read.inputs")}


def test_the_engine_imports_no_producer():
    found = set()
    for path in sorted((ROOT / "corpusprep" / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found |= {(path.relative_to(ROOT).as_posix(), n) for n in names
                      if any(n == p or n.startswith(p + ".") for p in PRODUCERS)}
    assert found <= ALLOWED, sorted(found - ALLOWED)
