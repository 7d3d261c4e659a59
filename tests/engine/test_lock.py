"""One writer per output directory; a dead writer's lock is gone with it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from corpusprep.engine.lock import LOCK_NAME, exclusive_dir
from corpusprep.errors import UsageError

HOLD = (
    "from corpusprep.engine.lock import exclusive_dir; import sys\nwith exclusive_dir(sys.argv[1]):\n    {}"
)


def test_second_writer_is_refused_with_the_holders_pid(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD.format("print('held', flush=True); sys.stdin.read()"), str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        message = rf"{tmp_path}: another corpusprep run is writing here \(pid {holder.pid}\)"
        with pytest.raises(UsageError, match=message), exclusive_dir(tmp_path):
            pass
    finally:
        holder.kill()
        holder.wait()
    # Killed, the holder released its lock: the directory is free again.
    with exclusive_dir(tmp_path):
        assert (tmp_path / LOCK_NAME).is_file()


def test_lock_is_released_after_each_run(tmp_path):
    for _ in range(2):
        with exclusive_dir(tmp_path / "new"):
            pass
    assert (tmp_path / "new").is_dir()
