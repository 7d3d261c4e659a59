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
        f"{record['output']}/{f}"
        for record in records
        if record["kind"] == "plot"
        for f in record["outputs"]
        if f.endswith(".png")
    )
    stages = []
    for record in records:
        stages.append(
            {
                "name": record["stage"],
                "kind": record["kind"],
                "status": record["status"],
                "fingerprint": record["fingerprint"],
                "inputs": record["inputs"],
                "output": record["output"],
                "files": len(record["outputs"]),
                "bytes": sum(record["outputs"].values()),
                "counts": record["counts"],
                "seconds": record["seconds"],
                "throughput": None
                if rate(record) is None
                else {"unit": f"{record['unit']}/s", "value": round(rate(record), 2)},
                "engine": record["engine"],
                "finished": record["finished"],
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
    for stage in summary["stages"]:
        t = stage["throughput"]
        speed = f"{t['value']:,.1f} {t['unit']}" if t else ""
        status = "ran" if stage["status"] == "ran" else "complete (skipped)"
        inputs = ", ".join(paths if name == "input" else name for name in stage["inputs"])
        lines.append(
            f"| {stage['name']} | {status} | {inputs} | `{stage['output']}` | {stage['files']} "
            f"| {stage['bytes'] / 1e6:,.2f} | {stage['seconds']:,.1f} | {speed} |"
        )
    lines.append("")
    lines.append("Times of skipped stages are those of the run that produced them.")
    for stage in summary["stages"]:
        counts = {k: v for k, v in stage["counts"].items() if not isinstance(v, (dict, list))}
        if not counts:
            continue
        lines += ["", f"## {stage['name']}", "", "| count | value |", "|---|---:|"]
        lines += [f"| {k} | {_number(v)} |" for k, v in counts.items()]
    if summary["curves"]:
        lines += ["", "## Training curves", ""]
        lines += [f"![{c}]({c})" for c in summary["curves"]]
    for stage in summary["stages"]:
        found = stage["counts"].get("evaluations") or {"": stage["counts"].get("evaluation")}
        if not all(isinstance(r, dict) for r in found.values()):
            continue
        lines += ["", f"## Evaluation: is the model better than nothing? ({stage['name']})", ""]
        if list(found) == [""]:  # one task: its page
            lines += evaluation.markdown(found[""]).splitlines()
        else:  # several: one table across them (medians over seeds), each task's page in OUT/NAME/
            lines += multitask.table(found)
            lines += ["", *(f"- {name}: `{stage['output']}/{name}/evaluation.md`" for name in found)]
        for name, result in found.items():  # the dev score per epoch of both models (dev-curves.png)
            where = f"{stage['output']}/{name}/" if name else f"{stage['output']}/"
            lines += [f"![dev score per epoch: {name or stage['name']}]({where}{c})"
                      for c in result.get("curves", [])]
    return "\n".join(lines) + "\n"
