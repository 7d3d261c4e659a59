"""The run report: `report.json` (everything, for tools) and `report.md` (a page a person reads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.files import write_json
from pipelines.config import Pipeline
from trainer.evaluate import multitask
from trainer.evaluate import summary as evaluation


def rate(record: dict[str, Any]) -> float | None:
    unit, seconds = record.get("unit"), record.get("seconds") or 0
    if not unit or seconds <= 0 or not isinstance(record["counts"].get(unit), (int, float)):
        return None
    return record["counts"][unit] / seconds


def rate_text(record: dict[str, Any]) -> str:
    r = rate(record)
    if r is None:
        return ""
    return f"({r:,.0f} {record['unit']}/s)" if r >= 100 else f"({r:.3g} {record['unit']}/s)"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def write_report(run_dir: Path, pipeline: Pipeline, records: list[dict], seconds: float) -> dict[str, Any]:
    curves = sorted(
        f"{r['output']}/{f}"
        for r in records
        if r["kind"] == "plot"
        for f in r["outputs"]
        if f.endswith(".png")
    )
    stages = []
    for r in records:
        stages.append(
            {
                "name": r["stage"],
                "kind": r["kind"],
                "status": r["status"],
                "fingerprint": r["fingerprint"],
                "inputs": r["inputs"],
                "output": r["output"],
                "files": len(r["outputs"]),
                "bytes": sum(r["outputs"].values()),
                "counts": r["counts"],
                "seconds": r["seconds"],
                "throughput": None
                if rate(r) is None
                else {"unit": f"{r['unit']}/s", "value": round(rate(r), 2)},
                "engine": r["engine"],
                "finished": r["finished"],
            }
        )
    summary = {
        "pipeline": pipeline.name,
        "source": str(pipeline.source),
        "run_dir": storage.url(run_dir),
        "config": pipeline.config,
        "stages": stages,
        "curves": curves,
        "seconds": round(seconds, 3),
    }
    write_json(run_dir / "report.json", summary)
    storage.write_text(run_dir / "report.md", markdown(summary))
    return summary


def markdown(summary: dict[str, Any]) -> str:
    lines = [
        f"# Run report: {summary['pipeline']}",
        "",
        f"Pipeline `{summary['source']}`, run dir `{summary['run_dir']}`; "
        f"this invocation took {summary['seconds']:.1f} s.",
        "",
        "| stage | status | inputs | output | files | MB | time (s) | throughput |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    paths = ", ".join(f"`{p}`" for p in summary["config"]["input"]["paths"])
    for s in summary["stages"]:
        t = s["throughput"]
        speed = f"{t['value']:,.1f} {t['unit']}" if t else ""
        status = "ran" if s["status"] == "ran" else "complete (skipped)"
        inputs = ", ".join(paths if name == "input" else name for name in s["inputs"])
        lines.append(
            f"| {s['name']} | {status} | {inputs} | `{s['output']}` | {s['files']} | {s['bytes'] / 1e6:,.2f} "
            f"| {s['seconds']:,.1f} | {speed} |"
        )
    lines.append("")
    lines.append("Times of skipped stages are those of the run that produced them.")
    for s in summary["stages"]:
        counts = {k: v for k, v in s["counts"].items() if not isinstance(v, (dict, list))}
        if not counts:
            continue
        lines += ["", f"## {s['name']}", "", "| count | value |", "|---|---:|"]
        lines += [f"| {k} | {_number(v)} |" for k, v in counts.items()]
    if summary["curves"]:
        lines += ["", "## Training curves", ""]
        lines += [f"![{c}]({c})" for c in summary["curves"]]
    for s in summary["stages"]:
        found = s["counts"].get("evaluations") or {"": s["counts"].get("evaluation")}
        if not all(isinstance(r, dict) for r in found.values()):
            continue
        lines += ["", f"## Evaluation: is the model better than nothing? ({s['name']})", ""]
        if list(found) == [""]:  # one task: its page
            lines += evaluation.markdown(found[""]).splitlines()
        else:  # several: one table across them (medians over seeds), each task's page in OUT/NAME/
            lines += multitask.table(found)
            lines += ["", *(f"- {name}: `{s['output']}/{name}/evaluation.md`" for name in found)]
        for name, result in found.items():  # the dev score per epoch of both models (dev-curves.png)
            where = f"{s['output']}/{name}/" if name else f"{s['output']}/"
            lines += [f"![dev score per epoch: {name or s['name']}]({where}{c})"
                      for c in result.get("curves", [])]  # fmt: skip
    return "\n".join(lines) + "\n"
