"""Each stage option is declared once, in its options dataclass (`corpusprep.flags`), and the command line
follows that declaration: a flag per declared field, in field order, with its help and default; given
nothing, the command hands its driver the library's defaults; given flags, the dataclass they describe,
and the run context of --workers, --overwrite and --progress."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
from pathlib import Path

import pytest
import typer.main

from corpusprep.cli import PREFIX, _run, app
from corpusprep.curate.options import CurateOptions
from corpusprep.errors import guarded
from corpusprep.flags import FIELD_DEFAULT, flags
from corpusprep.pair.options import PairOptions
from corpusprep.shard.options import ShardOptions
from corpusprep.split import SentencesOptions
from corpusprep.tokenize.options import VocabOptions

# command -> (its options dataclass, the module and name of the driver it calls, what the stand-in returns)
COMMANDS = {
    "build-pairs": (PairOptions, "corpusprep.pair.build", "build_pairs", {"nothing_to_do": True}),
    "shard": (ShardOptions, "corpusprep.shard.build", "build_shards", {"splits": {}}),
    "vocab": (VocabOptions, "corpusprep.tokenize.vocab", "build_vocab", {"reused": True}),
    "sentences": (SentencesOptions, "corpusprep.split.sentences", "run_sentences", None),
    "curate": (CurateOptions, "corpusprep.curate.build", "curate", {"nothing_to_do": True}),
}


def command_line(tmp_path: Path, command: str) -> list[str]:
    """The least a command takes: its input and output."""
    (tmp_path / "c.txt").write_text("Some text. More text.\n")
    return {
        "build-pairs": ["build-pairs", "c.txt", "--vocab", "v", "-o", "out"],
        "shard": ["shard", "pairs", "--vocab", "v", "-o", "out"],
        "vocab": ["vocab", "c.txt", "-o", "out"],
        "sentences": ["sentences", "c.txt", "-o", "out.txt"],
        "curate": ["curate", "c.txt", "-o", "out"],
    }[command]


def called_with(monkeypatch, tmp_path: Path, command: str, *flags_: str) -> tuple[int, str, dict]:
    """Run `corpusprep COMMAND ... FLAGS` in this process with its driver replaced by a stand-in: (exit
    code, stderr, the stand-in's arguments)."""
    import importlib

    _, module, name, returns = COMMANDS[command]
    seen: dict = {}

    def stand_in(*args, **kwargs):
        seen.update(args=args, **kwargs)
        return returns

    monkeypatch.setattr(importlib.import_module(module), name, stand_in)
    monkeypatch.chdir(tmp_path)
    err, before = io.StringIO(), sys.argv
    sys.argv = ["corpusprep", *command_line(tmp_path, command), *flags_]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = guarded(_run, prefix=PREFIX)
    finally:
        sys.argv = before
    return code, err.getvalue(), seen


@pytest.mark.parametrize("command", COMMANDS)
def test_the_flags_are_the_declared_fields_in_order_with_their_help_and_default(command):
    options = COMMANDS[command][0]
    params = {p.name: p for p in typer.main.get_command(app).commands[command].params}
    declared = flags(options)
    assert declared and all(flag.help for _, flag in declared)
    names = [field.name for field, _ in declared]
    assert [name for name in params if name in names] == names  # one flag each, in field order
    for field, flag in declared:
        param = params[field.name]
        assert param.help == flag.help
        default = field.default if flag.cli_default is FIELD_DEFAULT else flag.cli_default
        assert param.default == default, field.name


@pytest.mark.parametrize("command", COMMANDS)
def test_given_no_flag_a_command_hands_its_driver_the_librarys_defaults(monkeypatch, tmp_path, command):
    code, err, seen = called_with(monkeypatch, tmp_path, command)
    assert code == 0, err
    options = next(a for a in seen["args"] if isinstance(a, COMMANDS[command][0]))
    expected = COMMANDS[command][0]()
    if command == "sentences":  # its format follows the output's name
        expected = dataclasses.replace(expected, format="text")
    if command == "vocab":  # nothing on the command line is absolute: the library takes it as given
        assert options.from_vocab is None
    assert options == expected
    context = seen["context"]
    assert not context.overwrite and context.progress


def test_flags_give_the_options_they_describe_and_the_run_context(monkeypatch, tmp_path):
    given = ["--max-seq-length", "64", "--objective", "NONE", "--no-pack", "--short-seq-by", "Document",
             "--line-breaks", "Sentence", "--seed", "7", "--workers", "3", "--overwrite", "--no-progress"]
    code, err, seen = called_with(monkeypatch, tmp_path, "build-pairs", *given)
    assert code == 0, err
    options = seen["args"][3]
    assert options == PairOptions(max_seq_length=64, objective="none", pack=False, short_seq_by="document",
                                  line_breaks="sentence", seed=7)
    context = seen["context"]
    assert context.executor.workers == 3 and context.overwrite and not context.progress
    code, err, seen = called_with(monkeypatch, tmp_path, "curate", "--languages", "en,FR", "--filters",
                                  "gopher,", "--decontaminate", "a.tsv", "--decontaminate", "b.tsv",
                                  "--no-near")
    assert code == 0, err
    assert seen["args"][2] == CurateOptions(languages=("en", "fr"), filters=("gopher",), near=False,
                                            decontaminate=("a.tsv", "b.tsv"))
    code, err, seen = called_with(monkeypatch, tmp_path, "vocab", "--from-vocab", "given/v.txt", "--cased")
    assert code == 0, err
    assert seen["args"][2] == VocabOptions(cased=True, from_vocab=str(tmp_path / "given/v.txt"))
    code, err, seen = called_with(monkeypatch, tmp_path, "sentences", "--format", "PARQUET")
    assert code == 0, err
    assert seen["args"][2].format == "parquet"
    code, err, seen = called_with(monkeypatch, tmp_path, "shard", "--whole-word-mask", "--num-shards", "4")
    assert code == 0, err
    assert seen["args"][3] == ShardOptions(mask_strategy="whole-word", num_shards=4)
