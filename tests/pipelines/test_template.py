"""pipelines/template.toml is GPU-scale; each GPU-scale value has its CPU value beside it ("CPU: X"), and
those are pipelines/cpu-recipe.toml's, the one source of the CPU settings measured to make pre-training help
(docs/manual/evaluate.md). Its header says an omitted key takes the code's default: the value shown, or the
one its comment gives ("default: X")."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import tomllib

from pipelines.load import load_pipeline

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
# the settings that make a CPU run take days, stay at chance, or never help, if copied as they are
GPU_SCALE = {
    "vocab.vocab_size", "pairs.objective", "pairs.max_seq_length", "pairs.dupe_factor",
    "shard.max_predictions_per_seq", "train.model.preset", "train.model.dropout",
    "train.model.attention_dropout", "train.data.batch_size", "train.optim.lr", "train.schedule.steps",
    "train.checkpoint.every", "train.eval.every",
}


def noted(path: Path, note: str) -> dict[str, object]:
    """{section.key: value} of every `key = value  # ... NOTE: value` line of a pipeline file."""
    found, section = {}, ""
    for line in path.read_text().splitlines():
        if header := re.fullmatch(r"\[(\w+)\]\s*", line):
            section = header[1]
        elif match := re.match(rf"([\w.]+)\s*=.*#.*\b{note}: (\"[^\"]*\"|[^\s.,;()]+(?:\.\d+)?)", line):
            found[f"{section}.{match[1]}"] = tomllib.loads(f"v = {match[2]}")["v"]
    return found


def flat(table: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in table.items():
        out |= flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
    return out


def test_every_gpu_scale_value_has_the_cpu_recipes_value_beside_it():
    cpu = noted(PIPELINES / "template.toml", "CPU")
    assert set(cpu) >= GPU_SCALE
    recipe = flat(tomllib.loads((PIPELINES / "cpu-recipe.toml").read_text()))
    for key, value in cpu.items():
        assert recipe[key] == value, f"template {key}: CPU {value!r}, cpu-recipe.toml {recipe[key]!r}"


def test_a_key_left_out_takes_the_value_shown_or_the_default_its_comment_names():
    """The template's keys against the options' own defaults (vocab, build-pairs, shard; the trainer's
    config): the one source of each default is the code."""
    from corpusprep.pair.options import PairOptions
    from corpusprep.shard.options import ShardOptions
    from corpusprep.tokenize.options import VocabOptions
    from trainer.config import DEFAULT_PRESET, DEFAULT_STEPS, TrainConfig

    shown = flat(tomllib.loads((PIPELINES / "template.toml").read_text()))
    comments = noted(PIPELINES / "template.toml", "default")
    # as a stage resolves them: an omitted key's value once the options are built
    options = {"vocab": VocabOptions(), "pairs": PairOptions(), "shard": ShardOptions()}
    code = {f"{section}.{f.name}": getattr(built, f.name)
            for section, built in options.items() for f in dataclasses.fields(built)}
    code |= {"shard.examples_per_shard": 50_000}  # ShardOptions: None, neither it nor num_shards set
    code |= {f"train.{k}": v for k, v in flat(TrainConfig().to_dict()).items()}
    code |= {"train.model.preset": DEFAULT_PRESET, "train.schedule.steps": DEFAULT_STEPS}  # None: resolved so
    planned = load_pipeline(PIPELINES / "template.toml", check_inputs=False)
    runner = {f"train.{k}" for k in ("processes", "init_from_previous")}
    checked = 0
    for key, value in shown.items():
        if key.split(".")[0] not in ("vocab", "pairs", "shard", "train") or key in runner:
            continue
        default = code[key]
        if key in comments:  # "default: X" where the code's default is another value
            assert comments[key] == default and value != default, key
        elif default is not None:  # None: resolved from other settings (the preset's lr)
            assert value == default, f"template {key} = {value!r}, but an omitted key is {default!r}"
        checked += 1
    assert checked > 25 and planned.name == "template"
