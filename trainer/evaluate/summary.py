"""Scores of several seeds -> medians, means, spreads, the transfer gain and a verdict a person can read. Pure
Python (the pipeline's report renders the same table from evaluation.json).

The reported figure is the median over seeds, with the spread (standard deviation, min and max), as GLUE
practice reports fine-tuning (Devlin et al. 2019 and their successors report the median of several runs;
a single run's score moves by a point or more on the small GLUE sets). The gain is paired by seed: seed s
gives both models the same data order, dropout and task-head draw, so `pretrained[s] - random[s]` removes
what the two runs share. The verdict is a paired t-test at 95%: pre-training helps when the whole 95%
interval of the mean gain lies above zero, hurts when it lies below. Otherwise the gain is not established;
it is called seed noise only when the seeds disagree on its sign: when every seed's gain has the same sign,
the page says so ("every seed lower"), with the interval, and asks for more seeds. With one seed there is no
spread to judge by.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

# two-sided 95% quantiles of Student's t by degrees of freedom; between rows the smaller df (wider)
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}
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


def spread(values: list[float]) -> dict[str, Any]:
    mean, std = mean_std(values)
    return {"scores": values, "mean": mean, "std": std, "median": statistics.median(values),
            "min": min(values), "max": max(values)}


def compare(pretrained: list[float], random: list[float], metric: str = "accuracy") -> dict[str, Any]:
    """Per-seed scores of both models (same seeds, same order) -> medians, means, spreads, gain, verdict."""
    gains = [p - r for p, r in zip(pretrained, random, strict=True)]
    n = len(gains)
    result = {"pretrained": spread(pretrained), "random": spread(random), "gain": spread(gains)}
    gain, gain_std = result["gain"]["mean"], result["gain"]["std"]
    if gain_std is None:
        result["verdict"] = (f"one seed: gain {gain:+.3f} {metric}; run 2 or more seeds (--seeds) to tell it "
                             "from seed noise")
        result["outcome"] = "unknown"
        return result
    half = t_975(n - 1) * gain_std / math.sqrt(n)
    result["gain"]["interval"] = [gain - half, gain + half]
    shown = f"{gain:+.3f} ± {gain_std:.3f} {metric} over {n} seeds"
    interval = f"95% interval {gain - half:+.3f} to {gain + half:+.3f}"
    if gain - half > 0:
        result["outcome"], result["verdict"] = "helps", f"pre-training helps: {shown} ({interval})"
    elif gain + half < 0:
        result["outcome"], result["verdict"] = "hurts", f"pre-training hurts: {shown} ({interval})"
    elif all(g < 0 for g in gains) or all(g > 0 for g in gains):
        side = "lower" if gains[0] < 0 else "higher"
        result["outcome"] = "no_gain"
        result["verdict"] = (f"not established: every seed {side} with pre-training, {shown}, but the "
                             f"{interval} includes 0; run more seeds (--seeds) to tell")
    else:
        result["outcome"] = "no_gain"
        result["verdict"] = f"no gain beyond seed noise: {shown} ({interval}; the seeds disagree on its sign)"
    return result


def warnings(comparison: dict[str, Any], baseline: float, baseline_name: str) -> list[str]:
    """What a careful reader should not miss: a trained model whose median does not beat the cheap
    baseline."""
    found = []
    for key, name in (("pretrained", "pre-trained"), ("random", "randomly initialised")):
        median = comparison[key]["median"]
        if median <= baseline:
            found.append(f"the {name} model ({median:.4f}) does not beat the {baseline_name} baseline "
                         f"({baseline:.4f})" + (": fine-tuning did not converge (more --epochs, another "
                                                "--lr?) or the model learnt little" if key == "pretrained"
                                                else ""))
    return found


def run_warnings(runs: list[dict], split: str, unit: str) -> list[str]:
    """Runs that diverged or collapsed to one prediction (SST-2's 0.55 is its majority class: a run that
    learnt nothing looks like a score)."""
    found = []
    for run in runs:
        who = f"{run['init']} seed {run['seed']}"
        if run.get("diverged") and split == "dev":
            found.append(f"{who}: training diverged ({run['diverged']}): its scores mean nothing; lower --lr")
        if collapsed := run.get("collapsed", {}).get(split):
            found.append(f"{who} predicts {collapsed}: it collapsed to one answer (more --epochs, another "
                         f"--lr?)")
    return found


def _cell(value: float | None, signed: bool = False) -> str:
    if value is None:
        return ""
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def table(result: dict[str, Any], split: str = "dev") -> list[str]:
    """The markdown table of one scored split: a row per model, a column per seed, median, mean and std;
    the cheap baseline and the published figures that apply below."""
    scores = result["splits"][split]
    seeds = result["seeds"]
    head = f"| {split} {result['metric']} ({result['unit']}) | " + " | ".join(f"seed {s}" for s in seeds)
    lines = [head + " | median | mean | std |", "|---|" + "---:|" * (len(seeds) + 3)]
    for key, name, signed in (("pretrained", "pre-trained", False), ("random", "random init", False),
                              ("gain", "gain", True)):
        row = scores[key]
        cells = [_cell(v, signed) for v in row["scores"]]
        cells += [_cell(row.get("median"), signed), _cell(row["mean"], signed), _cell(row["std"])]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    blank = [""] * len(seeds)

    def reference(name: str, value: float) -> str:  # no seeds: the value in the median column
        return f"| {name} | " + " | ".join([*blank, _cell(value), "", ""]) + " |"

    lines.append(reference(result["baseline_name"], scores["baseline"]))
    lines += [reference(row["name"], row["value"]) for row in scores.get("published", [])
              if row["metric"] == result["metric"]]
    return lines


def other_metrics(result: dict[str, Any], split: str) -> str | None:
    """The split's other metrics, medians over seeds: `f1 0.81 (random 0.79, baseline 0.68)`."""
    found = result["splits"][split].get("metrics", {})
    parts = [f"{name} {m['pretrained']:.4f} (random {m['random']:.4f}, baseline {m['baseline']:.4f})"
             for name, m in found.items() if name != result["metric"]]
    return f"{split}: also (medians) {'; '.join(parts)}" if parts else None


def cost_line(cost: dict[str, Any]) -> str:
    """What the pre-training cost, as far as the run recorded it."""
    if not cost.get("known"):
        return f"pre-training cost: {cost.get('note', 'not recorded')}"
    parts = [f"{cost['steps']:,} steps"]
    if cost.get("examples") is not None:
        parts.append(f"{cost['examples']:,} sequences")
    if cost.get("tokens") is not None:
        parts.append(f"{cost['tokens'] / 1e6:,.1f}M tokens" if cost["tokens"] >= 1e5 else
                     f"{cost['tokens']:,} tokens")
    if cost.get("seconds") is not None:
        parts.append(f"{cost['seconds'] / 60:,.1f} min of training")
    note = f" ({cost['note']})" if cost.get("note") else ""
    return f"pre-training cost: {', '.join(parts)}{note}"


def settings_line(result: dict[str, Any]) -> str:
    s = result["settings"]
    chosen = "the epoch chosen on dev" if s.get("select", "best") == "best" else "the last epoch"
    grid = f"; a grid of {len(result['grid'])} configurations, each model's chosen on dev (below)" if \
        result.get("grid") else ""
    windows = ""
    if result.get("kind") == "qa" and s.get("doc_stride") is not None:
        windows = f" (context windows sharing {s['doc_stride']}, answers at most {s['max_answer_length']})"
    return (f"fine-tuning (both models): {s['epochs']:g} epochs ({chosen}), batch {s['batch_size']}, lr "
            f"{s['lr']:g} (warm-up {s['warmup']:.0%}, linear decay), weight decay {s['weight_decay']:g}, at "
            f"most {s['max_length']} word pieces{windows}, on {result['device']}{grid}")


def encoding_line(result: dict[str, Any]) -> str | None:
    """How the examples became model inputs, when not one each: windows (a long sentence, a SQuAD context),
    examples cut to fit, answers no window holds (the first run's: every run encodes alike)."""
    found = result["runs"][0].get("encoded", {}) if result.get("runs") else {}
    parts = []
    for split, c in found.items():
        if c["features"] == c["examples"] and not c["truncated"] and not c.get("unreachable"):
            continue
        part = f"{split} {c['examples']:,} examples in {c['features']:,} model inputs (windows)"
        part += f", {c['truncated']:,} cut to fit" if c["truncated"] else ""
        part += f", {c['unreachable']:,} answers in no one window (trained as no answer)" \
            if c.get("unreachable") else ""
        parts.append(part)
    return f"encoded: {'; '.join(parts)}" if parts else None


def markdown(result: dict[str, Any]) -> str:
    """The whole evaluation as a page: what was compared, the tables, the verdicts and the costs."""
    lines = [f"model: {result['model']['description']}", cost_line(result["model"]["cost"]),
             f"task: {result['task']}", settings_line(result)]
    lines += [f"note: {note}" for note in result.get("notes", [])]
    lines += [encoded] if (encoded := encoding_line(result)) else []
    lines.append("")
    for split, scores in result["splits"].items():
        lines += [*table(result, split), ""]
        lines.append(f"{split}: {scores['verdict']}")
        if also := other_metrics(result, split):
            lines.append(also)
        lines += [f"{split}: warning: {w}" for w in scores["warnings"]]
        lines.append("")
    for name, skips in result.get("skipped", {}).items():
        counts = ", ".join(f"{n:,} {reason}" for reason, n in skips["counts"].items())
        lines.append(f"skipped in {name} (--on-error skip): {counts}; e.g. {skips['examples'][0]}")
    for name, n in result.get("invalid_utf8", {}).items():
        lines.append(f"{name}: {n:,} invalid UTF-8 sequence(s) replaced by U+FFFD")
    if result.get("curves"):
        lines.append(f"dev score after each epoch, both models: {', '.join(result['curves'])}")
    runs = result.get("run_count", len(result["runs"]))
    lines.append(f"wall time: {result['wall_seconds'] / 60:.1f} min for {runs} fine-tuning runs, "
                 f"{result['runs_at_once']} at a time ({result['seconds'] / 60:.1f} min of runs in all); "
                 f"load average {result['load_average']:.1f} on {result['cpus']} CPUs at the start")
    return "\n".join(lines) + "\n"
