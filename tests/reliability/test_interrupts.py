"""Ctrl-C (SIGINT to the whole process group) at the awkward instants of a run with a worker pool: one line,
"interrupted; rerun to continue", exit 130, and no traceback from the process, its forkserver or a worker.

Each instant is reached on purpose, not by a timer: the child process sends the signal itself from a hook.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.reliability.helpers import REPO, corpusprep, environment

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("interrupts")]

# The real entry point, with SIGINT sent to the process group at one point of the run.
_CTRL_C_AT = """
import os, signal, sys, threading
from multiprocessing import forkserver
point = sys.argv.pop(1)
def ctrl_c():
    os.killpg(0, signal.SIGINT)
if point == "forkserver":  # the server is importing the stage's modules
    real = forkserver.set_forkserver_preload
    def set_forkserver_preload(names):
        real([*names, "tests.reliability.ctrl_c_on_import"])
    forkserver.set_forkserver_preload = set_forkserver_preload
elif point == "pool":  # the workers are booting
    from corpusprep.engine import faults
    real_reached = faults.reached
    def reached(name):
        if name == "pool_started":
            ctrl_c()
        real_reached(name)
    faults.reached = reached
elif point == "exit":  # the work is done and reported; the interpreter shuts down
    threading._register_atexit(ctrl_c)  # registered first, so it runs after every later one
elif point == "import":  # Python is loading the CLI (typer), before any of its handlers exist
    class CtrlCOnTyper:
        def find_spec(self, name, path=None, target=None):
            if name == "typer":
                ctrl_c()
            return None
    sys.meta_path.insert(0, CtrlCOnTyper())
from corpusprep.launch import main  # the console script's and `python -m corpusprep`'s entry
sys.argv[0] = "corpusprep"
main()
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("interrupts")
    paths = {"vocab": make_vocab(root / "vocab"), "pairs": root / "pairs",
             "corpus": write_bert(root / "corpus.txt", synthetic_documents(400, seed=2))}
    done = corpusprep("build-pairs", paths["corpus"], "--vocab", paths["vocab"], "-o", paths["pairs"],
                      "--input-format", "bert", "--workers", "1", "--dupe-factor", "2",
                      "--docs-per-partition", "50", "--no-progress")
    assert done.returncode == 0, done.stderr
    return paths


def argv(which: str, paths: dict[str, Path], out: Path) -> list[str]:
    if which == "build-pairs":
        return ["build-pairs", str(paths["corpus"]), "--vocab", str(paths["vocab"]), "-o", str(out),
                "--input-format", "bert", "--workers", "2", "--dupe-factor", "2",
                "--docs-per-partition", "50"]
    return ["shard", str(paths["pairs"]), "--vocab", str(paths["vocab"]), "-o", str(out), "--workers", "2",
            "--num-shards", "4"]


@pytest.mark.parametrize("point", ["import", "forkserver", "pool", "exit"])
@pytest.mark.parametrize("which", ["build-pairs", "shard"])
def test_ctrl_c_is_one_line_at_every_instant_of_a_pool(which, point, inputs, tmp_path):
    command = [sys.executable, "-c", _CTRL_C_AT, point, *argv(which, inputs, tmp_path / "out"),
               "--no-progress"]
    # its own process group: the signal stays inside it
    result = subprocess.run(command, cwd=REPO, env=environment(), capture_output=True, text=True,
                            timeout=120, start_new_session=True)
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
    if point == "exit":  # the work was done and said so: a Ctrl-C now changes nothing
        assert result.returncode == 0 and len(lines) == 1 and "interrupted" not in lines[0], result.stderr
    else:
        assert result.returncode == 130, result.stderr
        assert lines == ["corpusprep: interrupted; rerun to continue"], result.stderr


def test_the_commands_under_test_start_interruptible():
    """A suite started in the background (`./scripts/test &`, nohup, a CI runner) inherits SIGINT ignored and
    would pass it on to every command above, which then could not be interrupted (tests/conftest.py undoes it:
    the commands get what a user at a terminal has)."""
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    child = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
                           capture_output=True, text=True, timeout=60)
    assert "default_int_handler" in child.stdout, child.stdout


def test_a_worker_boot_failure_is_quiet_only_when_the_parent_is_going_away(monkeypatch, capsys):
    """A closed pipe or Ctrl-C while a worker boots: its parent says why. Any other fault keeps its traceback
    (the parent's "most likely the out-of-memory killer" would otherwise be the only word on it)."""
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # importing the module sets it: undone after
    from corpusprep.engine import worker_start

    for error in (EOFError(), BrokenPipeError(), KeyboardInterrupt()):
        worker_start._quiet(type(error), error, None)
    assert capsys.readouterr().err == ""
    worker_start._quiet(ValueError, ValueError("bad pickle"), None)
    assert "ValueError: bad pickle" in capsys.readouterr().err


def test_an_interrupt_raised_inside_exec_still_exits_130_under_python_m(tmp_path):
    """CPython's flag for an unhandled KeyboardInterrupt is set by one raised inside exec() of a string
    (dataclasses build methods so while a module is imported) and, under `python -m`, would end the
    process by SIGINT (-2) after the one line was said; `errors.forget_interrupt` clears it."""
    (tmp_path / "interrupted_in_exec.py").write_text(
        "import sys\nfrom corpusprep.errors import guarded\n"
        "def main():\n    exec('raise KeyboardInterrupt')\n"
        "sys.exit(guarded(main, prefix='corpusprep: error: '))\n"
    )
    env = {**environment(), "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    result = subprocess.run([sys.executable, "-m", "interrupted_in_exec"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip() == "corpusprep: interrupted; rerun to continue"
