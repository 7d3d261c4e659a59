"""No pickle from a run directory: a payload put into any file of a checkpoint never runs, whichever entry
point reads the checkpoint (the trainer starting with that run dir, --resume, --init-from, export, validate,
a pipeline adopting the run); each refuses in one line or, for a file it does not read, runs cleanly. A
checkpoint of the earlier, pickled format is refused with one line saying how to proceed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.security.trust_world import (
    copy,
    corpusprep,
    payload,
    train_args,
    trainer_export,
    trainer_run,
)

FILES = ["weights.safetensors", "trainer.safetensors", "trainer.json", "config.json", "pickled"]
PICKLED = ("model.pt", "optimizer.pt", "scheduler.pt", "trainer.pt")



def poisoned_run(outputs, tmp_path: Path, target: str) -> tuple[Path, Path]:
    """(a copy of the training run with a pickle payload in `target` of its newest checkpoint, the marker
    file the payload would create); "pickled": the checkpoint in the earlier format, every file a payload."""
    run = copy(outputs.run, tmp_path / "run")
    step = run / "checkpoints" / "step-0000002"
    marker = tmp_path / "payload-ran"
    if target == "pickled":
        for name in ("weights.safetensors", "trainer.safetensors", "trainer.json"):
            (step / name).unlink()
        for name in PICKLED:
            (step / name).write_bytes(payload(marker))
    else:
        (step / target).write_bytes(payload(marker))
    return run, marker


def one_line_or_clean(result) -> None:
    """A clean run, or one error line and exit 1 or 2 (never a traceback)."""
    assert result.code in (0, 1, 2), (result.code, result.err)
    if result.code:
        errors = [line for line in result.err.splitlines() if "error: " in line]
        assert len(errors) == 1 and errors[0] == result.line, result.err


@pytest.mark.slow  # ~5.2 s idle (all cases)
@pytest.mark.parametrize("target", FILES)
def test_a_payload_in_any_checkpoint_file_never_runs(outputs, tmp_path, target):
    run, marker = poisoned_run(outputs, tmp_path, target)
    shards = outputs.shards
    entry_points = {
        "start": lambda: trainer_run(*train_args(shards, run, 4)),
        "resume": lambda: trainer_run(*train_args(shards, run, 4), "--resume"),
        "init-from": lambda: trainer_run(*train_args(shards, tmp_path / "next", 1), "--init-from", run),
        "export": lambda: trainer_export(run, tmp_path / "hf", "--vocab", outputs.vocab),
        "validate": lambda: corpusprep("validate", run),
    }
    every = set(entry_points)
    reads = {"weights.safetensors": {"resume", "init-from", "export"}, "trainer.safetensors": {"resume"},
             "trainer.json": {"start", "resume"}, "config.json": every, "pickled": every}
    for name, call in entry_points.items():
        result = call()
        assert not marker.exists(), f"{name}: the payload in {target} ran"
        one_line_or_clean(result)
        if name in reads[target] or name == "validate":  # a file it reads: refused, the file named
            assert result.code in (1, 2), (name, result.out[-500:], result.err)
            named = "model.pt" if target == "pickled" else target
            assert named in (result.err if name == "validate" else result.line), (name, result.err)
    if target == "pickled":  # how to go on is said
        line = trainer_run(*train_args(shards, run, 4), "--resume").line
        assert "earlier pickled format" in line and "trainer.import_hf" in line


def test_validate_calls_a_poisoned_checkpoint_invalid_naming_the_file(outputs, tmp_path):
    for target in FILES:
        run, _ = poisoned_run(outputs, tmp_path / target, target)
        result = corpusprep("validate", run)
        assert result.code == 1 and "INVALID" in result.err, (target, result.err)
        named = "model.pt" if target == "pickled" else target
        assert re.search(rf"step-0000002/{re.escape(named)}: ", result.err), (target, result.err)


def test_no_code_path_unpickles_a_checkpoint():
    """torch.load (even with weights_only=True) and pickle.load read nothing: not what corpusprep or the
    trainer wrote, nor a Hugging Face pytorch_model.bin (import_hf refuses it unopened)."""
    root = Path(__file__).resolve().parents[2]
    for path in [p for top in ("corpusprep", "trainer", "pipelines") for p in root.glob(f"{top}/**/*.py")]:
        text = path.read_text()
        for call in ("torch.load(", "pickle.load(", "pickle.loads(", "weights_only=False"):
            assert call not in text, f"{path}: {call}"
