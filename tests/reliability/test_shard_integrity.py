"""`corpusprep shard` under failure: a task failing mid-run, a killed process, a full disk.

Whatever happens, no half-written shard appears under a final name, and a rerun ends byte-identical to a run
that was never interrupted.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from corpusprep.engine import faults
from corpusprep.errors import CorpusprepError
from corpusprep.shard import build
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from corpusprep.shard.validate import validate_shards
from tests.contexts import quiet
from tests.shard.realistic import pairs_dir, stream, vocab_dir  # noqa: F401  (fixtures)

OPTIONS = ShardOptions(num_shards=4, dupe_masks=2, seed=11)


def files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != ".corpusprep.lock"
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory, pairs_dir, vocab_dir):  # noqa: F811
    out = tmp_path_factory.mktemp("reference")
    build_shards(pairs_dir, vocab_dir, out, OPTIONS, context=quiet(1))
    return files(out)


@pytest.mark.slow  # ~1.4 s idle
def test_task_failing_mid_run_then_rerun_is_identical(
    tmp_path, pairs_dir, vocab_dir, reference, monkeypatch  # noqa: F811
):
    real, calls = build.write_parquet, []

    def fail_on_third(table, path, options):
        calls.append(path)
        if len(calls) == 3:
            raise RuntimeError("worker lost")
        real(table, path, options)

    monkeypatch.setattr(build, "write_parquet", fail_on_third)
    with pytest.raises(RuntimeError, match="worker lost"):
        build_shards(pairs_dir, vocab_dir, tmp_path, OPTIONS, context=quiet(1))
    assert not (tmp_path / "manifest.json").exists()
    assert len(list((tmp_path / "train").glob("shard-*.parquet"))) == 2  # the two finished ones, complete
    assert not list(tmp_path.rglob(".*.tmp-*"))
    monkeypatch.setattr(build, "write_parquet", real)
    build_shards(pairs_dir, vocab_dir, tmp_path, OPTIONS, context=quiet(1))
    assert files(tmp_path) == reference


@pytest.mark.slow  # ~1.3 s idle
def test_killed_process_then_rerun_is_identical(tmp_path, pairs_dir, vocab_dir, reference):  # noqa: F811
    command = [sys.executable, "-m", "corpusprep", "shard", str(pairs_dir), "--vocab", str(vocab_dir),
               "-o", str(tmp_path), "--num-shards", "4", "--dupe-masks", "2", "--seed", "11",
               "--workers", "1", "--no-progress"]
    # SIGKILL after 5 tasks: the 4 pass-1 tasks and one shard are done, as an OOM kill would leave it.
    killed = subprocess.run(command, env={**os.environ, **faults.spec("task_done", 5)}, capture_output=True)
    assert killed.returncode == -9, killed.stderr
    assert not (tmp_path / "manifest.json").exists()
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert files(tmp_path) == reference


def small_disk(size_kb: int, mount: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """`argv` run with `mount` a tmpfs of `size_kb` KiB: a disk that really fills (a mount namespace of its
    own, as root or through an unprivileged user namespace); a skip where neither can mount."""
    mount.mkdir()
    script = f'mount -t tmpfs -o size={size_kb}k tmpfs "$1" || exit 99; shift; exec "$@"'
    for prefix in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        try:
            done = subprocess.run([*prefix, "sh", "-c", script, "sh", str(mount), *argv], capture_output=True,
                                  text=True, timeout=300)
        except FileNotFoundError:
            break
        if done.returncode != 99 and "unshare failed" not in done.stderr:
            return done
    pytest.skip("no tmpfs of a set size can be mounted here (unshare, mount namespaces)")


def test_a_really_full_disk_says_disk_full_naming_the_file(tmp_path, pairs_dir, vocab_dir):  # noqa: F811
    """The pass-1 spill files are written with numpy, whose `tofile` lost the errno of a short write
    ("162176 requested and 149504 written"): every write now says "disk full" and the file, one mechanism
    (errors.describe_os_error)."""
    size_kb = max(64, sum(p.stat().st_size for p in pairs_dir.rglob("*.parquet")) // 3 // 1024)
    argv = [sys.executable, "-m", "corpusprep", "shard", str(pairs_dir), "--vocab", str(vocab_dir), "-o",
            str(tmp_path / "disk" / "shards"), "--workers", "1", "--no-progress"]
    done = small_disk(size_kb, tmp_path / "disk", argv)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"corpusprep: error: {tmp_path}/disk/shards/")
    assert lines[0].endswith(": cannot write: disk full (No space left on device)"), lines[0]


def test_disk_full_mid_write_leaves_no_partial_shard(
    tmp_path, pairs_dir, vocab_dir, reference, monkeypatch  # noqa: F811
):
    real = pq.write_table

    def write_then_fail(table, where, **kwargs):
        if "shard-00001" in str(where):
            Path(where).write_bytes(b"PAR1 half a shard")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", write_then_fail)
    full = r"shard-00001\.parquet: cannot write: disk full \(No space left on device\)"
    with pytest.raises(CorpusprepError, match=full):
        build_shards(pairs_dir, vocab_dir, tmp_path, OPTIONS, context=quiet(1))
    assert not (tmp_path / "train" / "shard-00001.parquet").exists()
    assert not list(tmp_path.rglob(".*.tmp-*"))
    assert validate_shards(tmp_path)  # unfinished: no manifest, so not valid
    monkeypatch.setattr(pq, "write_table", real)
    build_shards(pairs_dir, vocab_dir, tmp_path, OPTIONS, context=quiet(1))
    assert files(tmp_path) == reference and validate_shards(tmp_path) == []


def test_cli_reports_a_full_disk_in_one_line(tmp_path, pairs_dir, vocab_dir):  # noqa: F811
    # Through the real entry point, in a child process whose writer always fails.
    code = (
        "import errno, os, sys, pyarrow.parquet as pq\n"
        "def full(*a, **k): raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
        "pq.write_table = full\n"
        "from corpusprep.cli import main\n"
        f"sys.argv = ['corpusprep', 'shard', {str(pairs_dir)!r}, '--vocab', {str(vocab_dir)!r}, '-o', "
        f"{str(tmp_path)!r}, '--workers', '1', '--no-progress']\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].endswith(": cannot write: disk full (No space left on device)"), lines[0]
