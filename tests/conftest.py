"""Fixtures shared across the suite. Data in ../shared is optional: tests that need it skip cleanly."""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import sys
import uuid
from collections.abc import Iterator
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


def public_path(relative: str) -> Path:
    """A file of the fetched public evaluation copies (bench/yardsticks.py lists them and says where they come
    from), or a skip: CI has none."""
    from bench.yardsticks import PUBLIC_DATA

    path = PUBLIC_DATA / relative
    if not path.exists():
        pytest.skip(f"needs {relative} of the public copies in {PUBLIC_DATA} (bench/yardsticks.py)")
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


# --- a real S3 server on 127.0.0.1 (moto's), for the object-storage tests ---------------------------------

S3_BUCKET = "corpusprep-test"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """moto's S3 server on a free port of 127.0.0.1, for this test process and the commands it starts (they
    inherit the environment botocore reads: AWS_ENDPOINT_URL and test credentials), with one bucket; stopped
    at the end. Skips when moto or s3fs (`pip install 'corpusprep[test]'`) is not installed."""
    server_module = pytest.importorskip("moto.server", reason="needs moto[server] for a local S3 server")
    s3fs = pytest.importorskip("s3fs", reason="needs s3fs (the [s3] extra)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    settings = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in settings.items():
            patch.setenv(name, value)
        patch.delenv("AWS_PROFILE", raising=False)
        patch.delenv("AWS_SESSION_TOKEN", raising=False)
        s3fs.S3FileSystem(skip_instance_cache=True).mkdir(S3_BUCKET)
        try:
            yield endpoint
        finally:
            server.stop()


@pytest.fixture
def s3_dir(s3_server, request) -> str:
    """A fresh prefix of the test bucket for one test: `s3://corpusprep-test/<test>-<random>`."""
    name = re.sub(r"[^A-Za-z0-9-]+", "-", request.node.name)[:60]
    return f"s3://{S3_BUCKET}/{name}-{uuid.uuid4().hex[:8]}"
