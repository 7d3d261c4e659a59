"""The writer's lease on an object store (engine/lock.py), against a real S3 server (moto's, on 127.0.0.1):
one writer at a time, a live lease refused in one line naming its holder, a stale one taken over (by one of
two writers racing for it), its heartbeat renewed, a lease lost to another writer noticed before a commit."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from corpusprep.engine import lock, storage
from corpusprep.engine.lock import LOCK_NAME, check_held, exclusive_dir, shared_dir, take_lease
from corpusprep.errors import CorpusprepError, UsageError
from tests.conftest import REPO

HOLD = ("import sys\nfrom corpusprep.engine.lock import exclusive_dir\nwith exclusive_dir(sys.argv[1]):\n"
        "    print('held', flush=True)\n    sys.stdin.read()\n")


def lease_of(directory: str) -> dict:
    """The lease's record, read as a writer reads it (afresh, one version: its holder may be renewing it)."""
    found = lock.read_lease(Path(f"{directory}/{LOCK_NAME}"))
    assert found is not None
    return found[0]


def plant(directory: str, host: str, age_s: float, pid: int = 4242, heartbeat: str = "") -> None:
    """A lease another writer left: its host, pid and a heartbeat `age_s` seconds old (or `heartbeat`)."""
    heartbeat = heartbeat or (datetime.now(UTC) - timedelta(seconds=age_s)).isoformat()
    record = {"host": host, "pid": pid, "nonce": "f" * 16, "heartbeat": heartbeat, "timeout_s": 120.0}
    storage.write_bytes(f"{directory}/{LOCK_NAME}", json.dumps(record).encode())


@pytest.mark.slow  # two Python start-ups, one SIGKILLed, and the S3 server (3 s)
def test_a_second_writer_process_is_refused_then_takes_over_when_the_first_is_killed(s3_dir, tmp_path):
    out = f"{s3_dir}/out"
    (tmp_path / "a.txt").write_text("One sentence here. And another one.\n")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, out], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(UsageError) as refused, exclusive_dir(out):
            pass
        assert f"pid {holder.pid}, heartbeat " in str(refused.value)
        assert str(refused.value).startswith(f"{out}: another corpusprep run (host ")
        assert "\n" not in str(refused.value)
        with pytest.raises(UsageError, match="is writing here; wait for it to finish"), shared_dir(out):
            pass  # a reader is refused too
        command = [sys.executable, "-m", "corpusprep", "vocab", tmp_path / "a.txt", "-o", out, "--vocab-size",
                   "200", "--no-progress"]
        second = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
        assert second.stderr.startswith(f"corpusprep: error: {out}: another corpusprep run (host ")
        assert f"pid {holder.pid}," in second.stderr
    finally:
        holder.kill()
        holder.wait()
    assert lease_of(out)["pid"] == holder.pid  # a killed writer leaves its lease...
    with exclusive_dir(out):  # ...which a writer on the same host takes over at once: its pid is gone
        assert lease_of(out)["pid"] != holder.pid
    assert not storage.exists(f"{out}/{LOCK_NAME}")  # released


def test_two_writers_in_one_process_are_two_holders(s3_dir):
    out, held, release = f"{s3_dir}/out", threading.Event(), threading.Event()

    def first() -> None:
        with exclusive_dir(out):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(UsageError, match="another corpusprep run .* is writing here"), exclusive_dir(out):
            pass
    finally:
        release.set()
        thread.join()
    with exclusive_dir(out):  # the first released it
        pass


def test_a_stale_lease_is_taken_over_and_a_live_one_of_another_host_refused(s3_dir, monkeypatch):
    out = f"{s3_dir}/out"
    plant(out, "elsewhere", age_s=lock.LEASE_TIMEOUT_SECONDS - 30)
    with pytest.raises(UsageError, match=r"host elsewhere, pid 4242, heartbeat 90 s ago; its lease is stale "
                                         r"after 120 s\) is writing here"), exclusive_dir(out):
        pass
    assert lease_of(out)["host"] == "elsewhere"  # untouched
    plant(out, "elsewhere", age_s=lock.LEASE_TIMEOUT_SECONDS + 1)
    with exclusive_dir(out):
        ours = lease_of(out)
        assert ours["host"] != "elsewhere" and len(ours["nonce"]) == 16
    plant(out, "elsewhere", age_s=5, pid=1)  # a live pid here, but of another host: its pid says nothing
    with pytest.raises(UsageError, match="host elsewhere, pid 1,"), exclusive_dir(out):
        pass


def take(path: str, name: str, start: threading.Barrier, results: list) -> None:
    """Take the lease at `path` as the writer of host `name`, once `start` lets every taker go."""
    start.wait()
    try:
        results.append((name, take_lease(path, {**lock.new_holder(), "host": name})))
    except UsageError as error:
        results.append((name, str(error)))


def test_of_two_writers_taking_over_one_stale_lease_one_wins(s3_dir):
    path = f"{s3_dir}/out/{LOCK_NAME}"
    for _ in range(3):  # each time a fresh stale lease, and two takers released at once
        plant(f"{s3_dir}/out", "elsewhere", age_s=1000)
        start, results = threading.Barrier(2), []
        threads = [threading.Thread(target=take, args=(path, n, start, results)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        won = [name for name, got in results if isinstance(got, lock.Lease)]
        lost = [got for _, got in results if isinstance(got, str)]
        assert len(won) == 1 and len(lost) == 1, results
        assert "took over its stale lease just now" in lost[0] or "is writing here" in lost[0]
        assert lease_of(f"{s3_dir}/out")["host"] == won[0]  # the winner's lease is the one there


def test_the_heartbeat_is_renewed_and_a_lease_lost_stops_the_commit(s3_dir, monkeypatch):
    monkeypatch.setattr(lock, "HEARTBEAT_SECONDS", 0.05)
    out = f"{s3_dir}/out"
    with exclusive_dir(out):
        first = lease_of(out)["heartbeat"]
        time.sleep(0.5)
        assert lease_of(out)["heartbeat"] > first  # renewed, by the same holder
        check_held(out)  # still ours
        plant(out, "elsewhere", age_s=0)  # another writer took it over (this one stalled, say)
        deadline = time.monotonic() + 10
        while not lock._HELD[storage.url(out)].lost and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(CorpusprepError, match=f"{out}: this run's lease was lost: another writer"):
            check_held(out)
    assert lease_of(out)["host"] == "elsewhere"  # not ours: left in place on release


def test_a_lease_taken_over_between_two_heartbeats_is_seen_at_the_commit(s3_dir):
    out = f"{s3_dir}/out"  # the heartbeat every 15 s: none comes in this test
    with exclusive_dir(out):
        check_held(out)
        plant(out, "elsewhere", age_s=0)
        with pytest.raises(CorpusprepError, match="lease was lost: another writer took it over, or it was"):
            check_held(out)


def test_a_damaged_lease_is_one_line(s3_dir):
    storage.write_bytes(f"{s3_dir}/out/{LOCK_NAME}", b'{"host": "x", "pid": -1, "heartbeat": "now"}')
    damaged = f"{s3_dir}/out/{LOCK_NAME}: not a lease corpusprep wrote; delete it"
    with pytest.raises(UsageError, match=damaged), exclusive_dir(f"{s3_dir}/out"):
        pass
