"""Run corpusprep as a user does (a child process) and read what it leaves behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from corpusprep.engine import faults
from corpusprep.engine.lock import LOCK_NAME

REPO = Path(__file__).resolve().parents[2]

# The real entry point, with opening one file refused as EACCES: tests run as root, and root reads a
# chmod 000 file, so the permission error is simulated where the reader opens files.
_DENYING_MAIN = """
import sys
from corpusprep.engine import local_store
denied, real_open = sys.argv.pop(1), open
def guarded(path, *args, **kwargs):
    if str(path).endswith(denied):
        raise PermissionError(13, "Permission denied", str(path))
    return real_open(path, *args, **kwargs)
local_store.open = guarded
from corpusprep.cli import main
sys.argv[0] = "corpusprep"
main()
"""


def environment(kill_after: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != faults.ENV}
    env["OMP_NUM_THREADS"] = "1"
    if kill_after is not None:
        env.update(faults.spec("task_done", kill_after))
    return env


def command(*args: str | Path, deny: str | None = None) -> list[str]:
    args = [str(a) for a in args]
    if deny is not None:
        return [sys.executable, "-c", _DENYING_MAIN, deny, *args]
    return [sys.executable, "-m", "corpusprep", *args]


def corpusprep(
    *args: str | Path, deny: str | None = None, kill_after: int | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """`corpusprep ARGS` in a child process. `deny`: a file name whose opening fails with EACCES;
    `kill_after`: the executor SIGKILLs the process as its k-th task finishes."""
    return subprocess.run(command(*args, deny=deny), cwd=REPO, env=environment(kill_after),
                          capture_output=True, text=True, timeout=timeout)


def error_line(result: subprocess.CompletedProcess, prefix: str = "corpusprep: error: ") -> str:
    """The one error line of a failed command (after it the process printed nothing; no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith(prefix)]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    return errors[0].removeprefix(prefix)


def lock_holder(out: Path, proc: subprocess.Popen) -> None:
    """Wait until `proc` holds the lock on `out` (it writes its pid there once it has it)."""
    deadline = time.monotonic() + 60
    lock = out / LOCK_NAME
    while not (lock.is_file() and lock.read_text() == str(proc.pid)):
        assert proc.poll() is None and time.monotonic() < deadline, "the first run never took the lock"
        time.sleep(0.01)


def output_files(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` by relative path (the lock excluded: it holds the writer's pid)."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != LOCK_NAME
    }


def assert_final_files_complete(directory: Path) -> int:
    """Every Parquet file under a final name reads whole (the rows its footer promises), every JSON file
    parses; temporaries are hidden (`.name.tmp-PID`). Returns how many final Parquet files there are."""
    finals = 0
    for path in directory.rglob("*"):
        if path.name.startswith("."):
            assert ".tmp-" in path.name or path.name == LOCK_NAME or path.is_dir(), path
        elif path.suffix == ".parquet":
            assert pq.read_table(path).num_rows == pq.read_metadata(path).num_rows > 0, path
            finals += 1
        elif path.suffix == ".json":
            json.loads(path.read_text())
    return finals
