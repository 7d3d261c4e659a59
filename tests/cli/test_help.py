"""Every command's --help at 80 columns, the width of a narrow or non-interactive terminal: every option's
full name and default readable, no line wider than the terminal, nothing cut short with "…"."""

from __future__ import annotations

import argparse
import importlib
import re

import pytest
import typer.main
from typer.testing import CliRunner

from corpusprep.cli import app

WIDTH = 80
TRAINER_MODULES = ("trainer.run", "trainer.export", "trainer.import_hf", "trainer.plot",
                   "trainer.evaluate.__main__")


def commands(command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """(path, command) for the app and every subcommand (typer ships its own click: duck typing)."""
    found = [(path, command)]
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            found += commands(sub, (*path, name))
    return found


def flat(text: str) -> str:
    """The help text with line breaks and indentation collapsed, so a wrapped default reads as one."""
    return " ".join(text.split())


def check_layout(text: str) -> None:
    assert "…" not in text
    wide = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not wide, f"lines wider than {WIDTH} columns: {wide}"


def has_name(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


@pytest.mark.parametrize("path", [p for p, _ in commands(typer.main.get_command(app))], ids=" ".join)
def test_corpusprep_help_at_80_columns(path):
    command = dict(commands(typer.main.get_command(app)))[path]
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH)})
    assert result.exit_code == 0, result.output
    check_layout(result.output)
    for param in command.params:
        if param.param_type_name != "option" or param.hidden:
            continue
        for name in (*param.opts, *param.secondary_opts):
            assert has_name(result.output, name), f"{' '.join(path)}: {name} not shown in full"
        if not param.is_flag and param.default is not None and param.show_default is not False:
            shown = f"[default: {param.default}"
            assert shown in flat(result.output), f"{' '.join(path)}: {param.opts[0]} lacks {shown}]"


@pytest.mark.parametrize("module", TRAINER_MODULES)
def test_trainer_help_at_80_columns(module, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    parser: argparse.ArgumentParser = importlib.import_module(module).build_parser()
    text = parser.format_help()
    check_layout(text)
    for action in parser._actions:
        for name in action.option_strings:
            assert has_name(text, name), f"{module}: {name} not shown in full"
        if action.option_strings and action.default not in (None, False, [], argparse.SUPPRESS):
            assert f"default: {action.default}" in flat(text), f"{module}: {action.option_strings[0]}"


def test_trainer_run_help_shows_every_config_default(monkeypatch):
    from trainer import run

    monkeypatch.setenv("COLUMNS", str(WIDTH))
    text = flat(run.build_parser().format_help())
    for key, *_ in run.FLAGS.values():
        default = run.config_default(key)
        assert default or key in ("data.shards", "checkpoint.init_from"), key
        if default:
            assert f"({key}; default: {default})" in text
    assert "default: 10% of --steps" in text


@pytest.mark.parametrize("name", ["vocab", "sentences", "build-pairs", "shard", "run"])
def test_every_long_command_takes_no_progress(name):
    """Every command that draws progress bars takes --progress/--no-progress: a script can pass it to any."""
    command = dict(commands(typer.main.get_command(app)))[(name,)]
    flags = {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}
    assert {"--progress", "--no-progress"} <= flags
