"""Fixtures shared across the suite. Data in ../shared is optional: tests that need it skip cleanly."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

# pytest-xdist runs one test process per core: a torch (OpenMP) thread pool per process would oversubscribe
# the cores, and busy-waiting OpenMP threads then slow every torch test several-fold. Subprocesses inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# A suite started in the background by a non-interactive shell (`./scripts/test &`, nohup, some CI runners)
# inherits SIGINT ignored, and so would every command it starts: the Ctrl-C tests (tests/reliability/
# test_interrupts.py, tests/security/test_messages.py) would then see a command that cannot be interrupted.
# Give the test processes, and through them the commands, what a user at a terminal has.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def local_ray():
    """Ray, or a skip: not installed, or (a Ray limitation: corpusprep's engine says so in one line) this
    Python's path has a space, from which Ray cannot start local workers."""
    ray = pytest.importorskip("ray")
    if any(c.isspace() for c in sys.executable):
        pytest.skip(f"Ray cannot start local workers from a Python whose path has a space: {sys.executable}")
    return ray


def shared_path(relative: str) -> Path:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"needs ../shared/{relative}")
    return path


@pytest.fixture(scope="session")
def enwiki_path() -> Path:
    return shared_path("corpus/enwiki_AA.txt.xz")


@pytest.fixture(scope="session")
def bert_vocab_txt() -> Path:
    return shared_path("corpus/bert-base-uncased-vocab.txt")


@pytest.fixture(scope="session")
def sbd_dir() -> Path:
    return shared_path("sbd")
