"""A run dir moved elsewhere (`mv runs/demo /data/demo`) is the same run: its stages skip, resume and repair
there. The demo corpus lives inside the run dir, so the stages that read it record it relative to it."""

from __future__ import annotations

import shutil

import pytest

from tests.pipelines.helpers import SMALL, cli

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("moved_run_dir")]


def test_a_moved_demo_run_dir_repairs_a_lost_file(tmp_path):
    settings = [arg for s in ["input.demo_mb=0.2", *SMALL] for arg in ("--set", s)]
    first = cli(tmp_path / "here", *settings, "--until", "shard", timeout=300)
    assert first.returncode == 0, first.stderr
    moved = tmp_path / "elsewhere" / "run"
    moved.parent.mkdir()
    shutil.move(tmp_path / "here", moved)  # a rename: modification times are kept, as with mv
    lost = sorted((moved / "pairs" / "train").glob("*.parquet"))[0]
    lost.unlink()
    again = cli(moved, *settings, "--until", "shard", timeout=300)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert lost.is_file()  # repaired in place, not refused as "built from other inputs"
    assert "1 file(s) missing or changed" in again.stderr, again.stderr
