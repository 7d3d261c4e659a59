"""`python -m trainer.plot`: the NSP loss on its own axis, readable labels, a PNG per run."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("matplotlib")

from trainer.plot import figure, main  # noqa: E402


def records(steps: int = 40) -> list[dict]:
    """Curves shaped like a tiny CPU run's: MLM loss from 7.4 down to 5.5, NSP loss around ln 2."""
    out = []
    for step in range(10, steps * 10 + 1, 10):
        t = step / (steps * 10)
        nsp = math.log(2) + 0.02 * math.sin(step) - 0.03 * t
        out.append({"step": step, "loss": 7.4 - 1.9 * t + nsp, "mlm_loss": 7.4 - 1.9 * t, "nsp_loss": nsp})
        if step % 100 == 0:
            out.append({"step": step, "val_mlm_loss": 7.3 - 1.8 * t, "val_mlm_acc": 0.13 * t,
                        "val_nsp_loss": nsp, "val_nsp_acc": 0.5 + 0.05 * t})
    return out


@pytest.mark.slow  # ~1.4 s idle
def test_nsp_loss_has_its_own_axis_and_every_panel_is_labelled():
    import matplotlib.pyplot as plt

    fig = figure(records(), "training run demo")
    mlm, nsp, mlm_accuracy, nsp_accuracy = fig.axes
    titles = ["masked LM loss", "next-sentence loss", "masked LM accuracy (validation)",
              "next-sentence accuracy (validation)"]
    assert [ax.get_title() for ax in fig.axes] == titles
    low, high = nsp.get_ylim()
    assert high - low < 0.2 and low < math.log(2) < high  # NSP's variation fills its panel, not flattened
    assert mlm.get_ylim()[1] - mlm.get_ylim()[0] > 1.5
    for ax in fig.axes:
        assert ax.get_xlabel() == "step" and ax.get_ylabel()
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels and all(labels)
    low, high = mlm_accuracy.get_ylim()
    assert high < 0.2  # MLM accuracy (0.013 to 0.13 here) fills its own axis, not a 0-1 one shared with NSP
    assert nsp_accuracy.get_ylim()[0] < 0.5 < nsp_accuracy.get_ylim()[1]  # chance in view
    plt.close(fig)


def test_cli_writes_the_png(tmp_path, capsys):
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records()))
    assert main([str(tmp_path)]) == 0
    png = tmp_path / "curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    assert main([str(tmp_path / "missing")]) == 2
    assert "no metrics" in capsys.readouterr().err
