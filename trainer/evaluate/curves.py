"""The dev score after each epoch of fine-tuning, both models: `dev-curves.png` in an evaluation directory
(the median over seeds of each model, the seeds' range shaded, the cheap baseline as a line), drawn from the
runs' records. Does fine-tuning converge, and where does each model stop gaining? A picture answers at a
glance what the epoch chosen on dev says in one number."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.errors import plural

NAME = "dev-curves.png"
STYLE = {"pretrained": ("pre-trained", "tab:blue"), "random": ("random init", "tab:orange")}


def medians(runs: list[dict], init: str) -> list[tuple[float, float, float, float]]:
    """(epoch, median, min, max) over the seeds of `init`'s runs, at the epochs every seed scored."""
    curves = [r.get("curve") or [] for r in runs if r["init"] == init]
    if not curves or not all(curves):
        return []
    epochs = [e for e, _ in min(curves, key=len)]
    points = []
    for i, epoch in enumerate(epochs):
        values = [c[i][1] for c in curves]
        points.append((epoch, statistics.median(values), min(values), max(values)))
    return points


def title(result: dict[str, Any]) -> str:
    """The task's kind and its seeds: "tagging (form -> upos, 17 labels): 1 seed"."""
    return f"{result['task'].split(':')[0]}: {plural(len(result['seeds']), 'seed')}"


def plot(result: dict[str, Any], directory: Path) -> str | None:
    """Draw `result`'s dev curves into `directory`; the file's name, or None when no run has a curve."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    series = {init: medians(result["runs"], init) for init in STYLE}
    if not any(series.values()):
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for init, points in series.items():
        if points:
            label, color = STYLE[init]
            x = [p[0] for p in points]
            ax.plot(x, [p[1] for p in points], marker="o", color=color, label=f"{label} (median)")
            ax.fill_between(x, [p[2] for p in points], [p[3] for p in points], color=color, alpha=0.2)
    dev = result["splits"]["dev"]
    ax.axhline(dev["baseline"], color="grey", linestyle="--", label=result["baseline_name"])
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"dev {result['metric']}")
    ax.set_title(title(result))
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with storage.atomic_path(directory / NAME) as tmp:  # a new file put in place, never through a link
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return NAME if storage.exists(directory / NAME) else None
