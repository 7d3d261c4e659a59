"""Locks never follow a name corpusprep did not make: a lock file that is a symbolic link, a hard link, a FIFO
or a directory is refused in one line, and whatever it points at is left as it was. A forged lease on an
object store holds its prefix no longer than a stale one."""

from __future__ import annotations

import os

import pytest

from corpusprep.engine import lock, storage
from corpusprep.engine.lock import LOCK_NAME, exclusive_dir, shared_dir
from corpusprep.errors import UsageError
from tests.engine.test_lease import lease_of, plant
from tests.security.trust_world import corpusprep


def planted(kind: str, directory, victim):
    lock = directory / LOCK_NAME
    if kind == "symlink":
        lock.symlink_to(victim)
    elif kind == "hardlink":
        os.link(victim, lock)
    elif kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.mkdir()
    return lock


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "directory"])
def test_a_lock_that_is_not_a_plain_file_is_refused_and_its_target_untouched(tmp_path, kind):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    planted(kind, out, victim)
    refused = r"\.corpusprep\.lock: .*(link|not a regular file).*remove it"
    for hold in (exclusive_dir, shared_dir):
        with pytest.raises(UsageError, match=refused), hold(out):
            pass
    # a command: one line, exit 2, before anything is written
    text = tmp_path / "text.txt"
    text.write_text("One sentence here. Another one there.\n\nA second document. It has two sentences.\n")
    result = corpusprep("vocab", text, "-o", out, "--vocab-size", "200")
    assert result.code == 2 and LOCK_NAME in result.line and "Invalid argument" not in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]


def test_a_lease_dated_in_the_future_holds_a_prefix_no_longer_than_a_clock_can_err(s3_dir):
    """A forged lease whose heartbeat is in the year 9999 would lock its prefix for good: a heartbeat more
    than CLOCK_SKEW_SECONDS ahead of this clock is no live writer's, so it is stale and taken over (by the
    same conditional write as an expired one); one a little ahead (a clock's error) is still live."""
    out = f"{s3_dir}/out"
    assert lock.CLOCK_SKEW_SECONDS == 30
    plant(out, "elsewhere", age_s=-20)  # 20 s ahead: a live writer's whose clock is a little ahead
    ahead = r"heartbeat (19|20) s ahead of this machine's clock;"
    with pytest.raises(UsageError, match=ahead), exclusive_dir(out):
        pass
    for forged in ("9999-12-31T23:59:59+00:00", "9999-12-31T23:59:59-14:00"):
        plant(out, "elsewhere", age_s=0, heartbeat=forged)
        with exclusive_dir(out):
            assert lease_of(out)["host"] != "elsewhere"  # taken over: ours now
        assert not storage.exists(f"{out}/{LOCK_NAME}")  # and released
