"""Curves a user can read: the logged training loss is the mean over the record's window of steps (one
step's loss zig-zags), MLM accuracy on its own axis, and a metrics file the plot cannot fully use is a
counted skip or one line, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from trainer.config import load_config  # noqa: E402
from trainer.plot import figure, main  # noqa: E402
from trainer.train import train  # noqa: E402


def losses(shards: Path, run_dir: Path, every: int) -> list[dict]:
    train(load_config({
        "model": {"preset": "tiny"}, "data": {"shards": str(shards), "batch_size": 8},
        "schedule": {"steps": 8, "warmup_steps": 2}, "checkpoint": {"every": 8},
        "eval": {"every": 0, "max_batches": 1}, "logging": {"run_dir": str(run_dir), "every": every},
        "device": "cpu",
    }))
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in records if "mlm_loss" in r]


def test_the_logged_loss_is_the_mean_over_its_window(tiny_shards, tmp_path):
    """The same seeded run logged every step and every 4 steps: each record of the second is the mean of the
    first's four steps, and says how many steps it covers."""
    steps = losses(tiny_shards, tmp_path / "every-step", every=1)
    windows = losses(tiny_shards, tmp_path / "every-4", every=4)
    assert [r["step"] for r in windows] == [4, 8] and [r["window_steps"] for r in windows] == [4, 4]
    for record, k in zip(windows, (0, 4), strict=True):
        for key in ("loss", "mlm_loss", "nsp_loss"):
            mean = sum(r[key] for r in steps[k : k + 4]) / 4
            assert record[key] == pytest.approx(mean, rel=1e-6), key
    assert windows[1]["lr"] == steps[7]["lr"]  # the lr is the last step's, not a mean


def curve(steps: int = 30, objective: str = "nsp") -> list[dict]:
    """A small CPU run's shape: MLM accuracy from 0.02 to 0.16; NSP accuracy near 0.5 until late."""
    out = []
    for step in range(10, steps * 10 + 1, 10):
        t = step / (steps * 10)
        out.append({"step": step, "loss": 8 - 2 * t, "mlm_loss": 7.3 - 2 * t, "window_steps": 10}
                   | ({f"{objective}_loss": 0.69} if objective != "none" else {}))
        if step % 50 == 0:
            out.append({"step": step, "val_mlm_loss": 7.2 - 2 * t, "val_mlm_acc": 0.02 + 0.14 * t}
                       | ({f"val_{objective}_loss": 0.69, f"val_{objective}_acc": 0.5 + 0.1 * t ** 4}
                          if objective != "none" else {}))
    return out


@pytest.mark.parametrize("objective", ["nsp", "sop", "none"])
def test_mlm_accuracy_has_its_own_axis(objective):
    import matplotlib.pyplot as plt

    fig = figure(curve(objective=objective), "run")
    axes = {ax.get_title(): ax for ax in fig.axes}
    accuracy = axes["masked LM accuracy (validation)"]
    low, high = accuracy.get_ylim()
    assert 0 < low < 0.05 and 0.15 < high < 0.25  # its rise fills the panel (0.02 -> 0.16)
    if objective == "none":
        assert len(fig.axes) == 2  # loss and accuracy of masked LM, nothing else
    else:
        task = {"nsp": "next-sentence", "sop": "sentence-order"}[objective]
        assert axes[f"{task} accuracy (validation)"].get_ylim()[0] < 0.5  # chance in view
    plt.close(fig)


def test_records_it_cannot_use_are_counted_not_a_traceback(tmp_path, capsys):
    lines = [json.dumps(r) for r in curve(6)]
    foreign = [{"step": 15, "loss": 7.0}, {"step": 16, "mlm_loss": "high"}, [1, 2], {"note": "hi"}]
    lines[1:1] = [json.dumps(r) for r in foreign]  # another program's records, or a hand edit
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert main([str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(tmp_path / "curves.png") and (tmp_path / "curves.png").stat().st_size > 20_000
    assert err.strip() == (f"{tmp_path / 'metrics.jsonl'}: skipped 4 record(s) that are neither training nor "
                           "validation metrics (first: record 2)")


@pytest.mark.slow  # ~7 s idle under load: subprocesses
def test_a_file_with_no_usable_record_is_one_line(tmp_path):
    import subprocess
    import sys

    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 7.0}) + "\n")
    repo = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-m", "trainer.plot", str(tmp_path)], capture_output=True,
                         text=True, cwd=repo)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip() == (f"error: {tmp_path / 'metrics.jsonl'}: no training or validation record (a "
                                  "step with mlm_loss or val_mlm_loss)")


def test_a_pipeline_run_plots_its_training_stage(tmp_path, capsys):
    """`python -m trainer.plot runs/demo`, as `trainer.export runs/demo` takes the pipeline's run."""
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in curve(6)))
    assert main([str(tmp_path)]) == 0 and (tmp_path / "train" / "curves.png").is_file()
    (tmp_path / "seq512" / "train").mkdir(parents=True)
    (tmp_path / "seq512" / "train" / "metrics.jsonl").write_text(json.dumps(curve(3)[0]) + "\n")
    capsys.readouterr()
    assert main([str(tmp_path)]) == 2
    assert "holds 2 training runs" in capsys.readouterr().err
