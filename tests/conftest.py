"""Fixtures shared across the suite. Data in ../shared is optional: tests that need it skip cleanly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# pytest-xdist runs one test process per core: a torch (OpenMP) thread pool per process would oversubscribe
# the cores, and busy-waiting OpenMP threads then slow every torch test several-fold. Subprocesses inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


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
