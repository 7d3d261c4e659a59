"""Scores of several seeds -> means, spreads, the transfer gain and a verdict a person can read. Pure Python
(the pipeline's report renders the same table from evaluation.json).

The gain is paired by seed: seed s gives both models the same data order, dropout and classifier-head draw,
so `pretrained[s] - random[s]` removes what the two runs share. The verdict is a paired t-test at 95%:
pre-training helps when the whole 95% interval of the mean gain lies above zero, hurts when it lies below,
and otherwise the gain is not told apart from seed noise. With one seed there is no spread to judge by.
"""

from __future__ import annotations

import math
from typing import Any

# two-sided 95% quantiles of Student's t by degrees of freedom; between rows the smaller df (wider)
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}  # fmt: skip
Z_975 = 1.959964


def t_975(df: int) -> float:
    if df > max(T_975):  # Cornish-Fisher to first order: within 0.003 of the exact quantile beyond 30
        return Z_975 + (Z_975**3 + Z_975) / (4 * df)
    return T_975[max(d for d in T_975 if d <= df)]


def mean_std(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (n - 1; None for one value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def compare(pretrained: list[float], random: list[float], metric: str = "accuracy") -> dict[str, Any]:
    """Per-seed scores of both models (same seeds, same order) -> means, spreads, gain and verdict."""
    gains = [p - r for p, r in zip(pretrained, random, strict=True)]
    n = len(gains)
    (pre_mean, pre_std), (rand_mean, rand_std), (gain, gain_std) = map(mean_std, (pretrained, random, gains))
    result = {
        "pretrained": {"scores": pretrained, "mean": pre_mean, "std": pre_std},
        "random": {"scores": random, "mean": rand_mean, "std": rand_std},
        "gain": {"scores": gains, "mean": gain, "std": gain_std},
    }
    if gain_std is None:
        result["verdict"] = (f"one seed: gain {gain:+.3f} {metric}; run 2 or more seeds (--seeds) to tell it "
                             "from seed noise")  # fmt: skip
        result["outcome"] = "unknown"
        return result
    half = t_975(n - 1) * gain_std / math.sqrt(n)
    result["gain"]["interval"] = [gain - half, gain + half]
    spread = f"{gain:+.3f} ± {gain_std:.3f} {metric} over {n} seeds"
    if gain - half > 0:
        result["outcome"], result["verdict"] = "helps", f"pre-training helps: {spread}"
    elif gain + half < 0:
        result["outcome"], result["verdict"] = "hurts", f"pre-training hurts: {spread}"
    else:
        result["outcome"], result["verdict"] = "no_gain", f"no gain beyond seed noise: {spread}"
    result["verdict"] += f" (95% interval {gain - half:+.3f} to {gain + half:+.3f})"
    return result


def warnings(comparison: dict[str, Any], baseline: float, baseline_name: str) -> list[str]:
    """What a careful reader should not miss: a trained model that does not beat the cheap baseline."""
    found = []
    for key, name in (("pretrained", "pre-trained"), ("random", "randomly initialised")):
        mean = comparison[key]["mean"]
        if mean <= baseline:
            found.append(f"the {name} model ({mean:.4f}) does not beat the {baseline_name} baseline "
                         f"({baseline:.4f})" + (": fine-tuning did not converge (more --epochs, another "
                                                "--lr?) or the model learnt little" if key == "pretrained"
                                                else ""))  # fmt: skip
    return found


def _cell(value: float | None, signed: bool = False) -> str:
    if value is None:
        return ""
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def table(result: dict[str, Any], split: str = "dev") -> list[str]:
    """The markdown table of one scored split: a row per model, a column per seed, mean and std."""
    scores = result["splits"][split]
    seeds = result["seeds"]
    head = f"| {split} {result['metric']} ({result['unit']}) | " + " | ".join(f"seed {s}" for s in seeds)
    lines = [head + " | mean | std |", "|---|" + "---:|" * (len(seeds) + 2)]
    for key, name, signed in (("pretrained", "pre-trained", False), ("random", "random init", False),
                              ("gain", "gain", True)):  # fmt: skip
        row = scores[key]
        cells = [_cell(v, signed) for v in row["scores"]] + [_cell(row["mean"], signed), _cell(row["std"])]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = [""] * len(seeds) + [f"{scores['baseline']:.4f}", ""]  # the baseline has no seed
    lines.append(f"| {result['baseline_name']} | " + " | ".join(cells) + " |")
    return lines


def cost_line(cost: dict[str, Any]) -> str:
    """What the pre-training cost, as far as the run recorded it."""
    if not cost.get("known"):
        return f"pre-training cost: {cost.get('note', 'not recorded')}"
    parts = [f"{cost['steps']:,} steps"]
    if cost.get("examples") is not None:
        parts.append(f"{cost['examples']:,} sequences")
    if cost.get("tokens") is not None:
        parts.append(f"{cost['tokens'] / 1e6:,.1f}M tokens" if cost["tokens"] >= 1e5 else
                     f"{cost['tokens']:,} tokens")  # fmt: skip
    if cost.get("seconds") is not None:
        parts.append(f"{cost['seconds'] / 60:,.1f} min of training")
    note = f" ({cost['note']})" if cost.get("note") else ""
    return f"pre-training cost: {', '.join(parts)}{note}"


def markdown(result: dict[str, Any]) -> str:
    """The whole evaluation as a page: what was compared, the tables, the verdicts and the costs."""
    s = result["settings"]
    lines = [
        f"model: {result['model']['description']}",
        cost_line(result["model"]["cost"]),
        f"task: {result['task']}",
        f"fine-tuning (both models): {s['epochs']:g} epochs, batch {s['batch_size']}, lr {s['lr']:g} "
        f"(warm-up {s['warmup']:.0%}, linear decay), weight decay {s['weight_decay']:g}, at most "
        f"{s['max_length']} word pieces, on {result['device']}",
        "",
    ]
    for split in result["splits"]:
        lines += [*table(result, split), ""]
        lines.append(f"{split}: {result['splits'][split]['verdict']}")
        lines += [f"{split}: warning: {w}" for w in result["splits"][split]["warnings"]]
        lines.append("")
    for name, skips in result.get("skipped", {}).items():
        counts = ", ".join(f"{n:,} {reason}" for reason, n in skips["counts"].items())
        lines.append(f"skipped in {name} (--on-error skip): {counts}; e.g. {skips['examples'][0]}")
    for name, n in result.get("invalid_utf8", {}).items():
        lines.append(f"{name}: {n:,} invalid UTF-8 sequence(s) replaced by U+FFFD")
    runs = len(result["seeds"]) * 2
    lines.append(f"wall time: {result['wall_seconds'] / 60:.1f} min for {runs} fine-tuning runs, "
                 f"{result['runs_at_once']} at a time ({result['seconds'] / 60:.1f} min of runs in all); "
                 f"load average {result['load_average']:.1f} on {result['cpus']} CPUs at the start")
    return "\n".join(lines) + "\n"
