"""What killed writers leave: a process killed with its group is a zombie until its parent reaps it (1-3 s
under load), and `kill(pid, 0)` succeeds on a zombie. The one liveness check (`files.alive`) calls it dead,
so a rerun started at once removes its temporaries and takes over its lease; a rerun that finds the output
complete still removes dead writers' temporaries; `validate` names any that are left."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from corpusprep.engine import lock, storage
from corpusprep.engine.files import alive, remove_stale_temps
from tests.security.trust_world import corpusprep


@contextlib.contextmanager
def zombie() -> Iterator[int]:
    """The pid of a process that has ended and is not reaped yet (state Z), for the duration."""
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while storage.process_stat(child.pid)[0] != "Z":
        assert time.monotonic() < deadline, "the child never ended"
        time.sleep(0.01)
    try:
        yield child.pid
    finally:
        child.wait()


def temp_of(final: Path, pid: int) -> Path:
    """The temporary name process `pid` writes `final` under (`storage.temp_name`'s shape)."""
    return final.with_name(f".{final.name}.tmp-{pid}-{storage.process_start(pid)}")


def test_a_zombie_is_no_live_writer(tmp_path):
    with zombie() as pid:
        assert storage.process_start(pid) > 0  # its pid and start are still those of the name
        assert not alive(pid)
        left = temp_of(tmp_path / "part-00000.parquet", pid)
        left.write_bytes(b"half")
        assert remove_stale_temps(tmp_path, ["*.parquet"]) == 1 and not left.exists()
        heartbeat = datetime.now(UTC).isoformat()  # renewed just now: only the dead pid makes it stale
        assert lock._stale({"host": socket.gethostname(), "pid": pid, "heartbeat": heartbeat})


def test_a_complete_output_is_swept_and_validate_names_a_leftover(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("".join(f"Document {i} says a few words. And some more.\n\n" for i in range(60)))
    build = ["vocab", text, "-o", tmp_path / "vocab", "--vocab-size", "120", "--no-progress"]
    assert corpusprep(*build).code == 0
    with zombie() as pid:
        left = temp_of(tmp_path / "vocab" / "vocab.txt", pid)
        left.write_bytes(b"[PAD]\n")
        checked = corpusprep("validate", tmp_path / "vocab")
        assert checked.code == 1, checked.err
        assert f"{left.name}: leftover temporary file of an interrupted write" in checked.err
        rerun = corpusprep(*build)
        assert rerun.code == 0 and "up to date" in rerun.err + rerun.out  # nothing to rebuild ...
        assert not left.exists()  # ... and the dead writer's temporary gone
    assert corpusprep("validate", tmp_path / "vocab").code == 0
