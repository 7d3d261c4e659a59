"""pipelines/template.toml is GPU-scale; each GPU-scale value has its CPU value beside it ("CPU: X"), and
those are the demo pipeline's, whose CPU run is known to learn (tests/trainer/test_learning.py)."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
# the settings that make a CPU run take days or stay at chance if copied as they are
GPU_SCALE = {
    "vocab.vocab_size", "pairs.max_seq_length", "pairs.dupe_factor", "shard.max_predictions_per_seq",
    "train.model.preset", "train.optim.lr", "train.schedule.steps", "train.checkpoint.every",
    "train.eval.every",
}  # fmt: skip


def cpu_values(path: Path) -> dict[str, object]:
    """{section.key: value} for every `key = value  # ... CPU: value` line of a pipeline file."""
    found, section = {}, ""
    for line in path.read_text().splitlines():
        if header := re.fullmatch(r"\[(\w+)\]\s*", line):
            section = header[1]
        elif note := re.match(r"([\w.]+)\s*=.*#.*\bCPU: (\S+)", line):
            found[f"{section}.{note[1]}"] = tomllib.loads(f"v = {note[2]}")["v"]
    return found


def lookup(table: dict, key: str) -> object:
    for part in key.split("."):
        table = table[part]
    return table


def test_every_gpu_scale_value_has_the_demo_pipelines_cpu_value_beside_it():
    cpu = cpu_values(PIPELINES / "template.toml")
    assert set(cpu) >= GPU_SCALE
    demo = tomllib.loads((PIPELINES / "demo.toml").read_text())
    flat_demo = {}
    for section, table in demo.items():
        for key, value in table.items():
            if isinstance(value, dict):
                flat_demo |= {f"{section}.{key}.{k}": v for k, v in value.items()}
            else:
                flat_demo[f"{section}.{key}"] = value
    for key, value in cpu.items():
        assert flat_demo[key] == value, f"template {key}: CPU {value!r}, demo.toml {flat_demo[key]!r}"
