"""Every file the tool writes follows the umask, like any Unix tool: a pipeline run (vocab, pairs, shards,
checkpoints, curves, report, markers) and a model exported from it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pipelines.load import load_pipeline
from pipelines.runner import run_pipeline
from tests.contexts import quiet
from tests.pipelines.helpers import DEMO, SMALL

UMASK = 0o027  # not the common 022, so that a hard-coded 0644 is caught too


def wrong_modes(root: Path) -> dict[str, str]:
    """Paths under root (root included) whose mode is not what the umask gives a new file or directory."""
    wrong = {}
    for path in [root, *root.rglob("*")]:
        want = (0o777 if path.is_dir() else 0o666) & ~UMASK
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode != want:
            wrong[str(path.relative_to(root.parent))] = oct(mode)
    return wrong


@pytest.mark.slow
def test_pipeline_and_export_outputs_follow_the_umask(tmp_path):
    pytest.importorskip("trainer.plot")
    from trainer import export

    old = os.umask(UMASK)
    try:
        run_dir = tmp_path / "run"
        run_pipeline(load_pipeline(DEMO, ["input.demo_mb=0.1", *SMALL]), run_dir, context=quiet(1))
        assert export.main([str(run_dir), str(tmp_path / "hf")]) == 0
    finally:
        os.umask(old)
    written = {p.name for p in run_dir.rglob("*")} | {p.name for p in (tmp_path / "hf").iterdir()}
    expected = {"model.safetensors", "weights.safetensors", "tokenizer_config.json", "manifest.json",
                "curves.png"}
    assert expected <= written
    assert wrong_modes(run_dir) == {}
    assert wrong_modes(tmp_path / "hf") == {}
