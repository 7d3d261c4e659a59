"""A pipeline file (TOML) -> an ordered plan of stages, each with the resolved settings that fingerprint it.

    [pipeline] name, seed           [input] paths, format, text_field, on_error, demo_mb
    [vocab] [pairs] [shard] [train]  the stage settings, shared by every phase
    [phases.NAME.pairs|shard|train]  optional: one pairs -> shard -> train set per phase, in file order,
                                     each phase's tables overriding the shared ones
    [evaluate]                       optional: fine-tune the last phase's model and the same model
                                     randomly initialised on a labelled task (trainer.evaluate)

`--set section.key=value` edits the file's tables before anything else (`--set phases.seq512.train.x=1`).
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.errors import UsageError
from corpusprep.read.document import MAX_DOCUMENT_MB, ReadOptions
from corpusprep.settings import check_settings, parse_toml
from trainer.threads import available_cores

DEMO_INPUT = "@demo"  # input.paths = ["@demo"]: the embedded demo corpus, built at run time
SECTIONS = ("pipeline", "input", "curate", "vocab", "pairs", "shard", "train", "phases", "evaluate")
PHASE_SECTIONS = ("pairs", "shard", "train")
# the kinds of stage in the order they run in a phase
STAGE_ORDER = ("corpus", "curate", "vocab", "pairs", "shard", "train", "plot", "evaluate")
# demo_mb: size of the demo corpus (None: corpusprep.demo_corpus.DEFAULT_MAX_MB)
INPUT_DEFAULTS = {"paths": [DEMO_INPUT], "format": "auto", "text_field": "text", "on_error": "auto",
                  "max_document_mb": MAX_DOCUMENT_MB, "document_per_file": False, "demo_mb": None}
READ_KEYS = ("format", "text_field", "on_error", "max_document_mb", "document_per_file")  # -> ReadOptions


def _processes(value: Any) -> bool:
    """torchrun's processes on this machine: each needs a core of its own to feed its device."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= available_cores()


# [train] keys the runner reads itself (the trainer never sees them): name -> (check, what it must be)
RUNNER_TRAIN_KEYS = {
    "processes": (_processes, f"an integer from 1 to {available_cores()} (the cores this machine gives "
                              "this process)"),
    "init_from_previous": (lambda v: isinstance(v, bool), "true or false"),
}
# What a run dir holds beside the stages' directories: a phase may not be named so (its stages would
# write into them)
RUN_DIR_NAMES = ("stages", "vocab", "corpus", "evaluate", "run.json", "pipeline.json", "report.md")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Stage:
    """One step of a run. `settings` are all that decide its output (fingerprinted, never paths inside the
    run dir, engine or worker count); `needs` names, by role ("corpus", "vocab", "pairs", "shards", "init",
    "train"), the stages (or "input") whose outputs it reads."""

    name: str
    kind: str
    settings: dict[str, Any]
    needs: dict[str, str]
    output: str  # directory relative to the run dir
    phase: str = ""


@dataclass(frozen=True)
class Pipeline:
    name: str
    source: Path
    config: dict[str, Any]  # the file's tables after --set, as run (for the report)
    stages: tuple[Stage, ...] = field(default=())

    @property
    def demo_input(self) -> bool:
        return self.config["input"]["paths"] == [DEMO_INPUT]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


def parse_value(text: str) -> Any:
    """A `--set` value: a TOML value (1e-4, true, "x", [1, 2]) or else the text itself."""
    try:
        return parse_toml(f"v = {text}", "--set")["v"]
    except UsageError:  # not a TOML value (or one nested too deeply): the text itself
        return text


def apply_override(config: dict[str, Any], item: str) -> None:
    key, sep, text = item.partition("=")
    parts = [p.strip() for p in key.split(".")]
    if not sep or len(parts) < 2 or not all(parts):
        raise UsageError(f"--set {item!r}: expected section.key=value")
    if parts[0] not in SECTIONS:
        raise UsageError(f"--set {item!r}: unknown section {parts[0]!r} (known: {', '.join(SECTIONS)})")
    table = config
    for part in parts[:-1]:
        table = table.setdefault(part, {})
        if not isinstance(table, dict):
            raise UsageError(f"--set {item!r}: {part!r} is a value, not a table")
    value = parse_value(text.strip())
    if parts == ["input", "paths"] and isinstance(value, str):
        value = [value]
    table[parts[-1]] = value


def _absolute(value: Any, base: Path) -> Any:
    if not isinstance(value, str) or value == DEMO_INPUT or storage.scheme_of(value):
        return value  # a URL (s3://...) is absolute
    return os.path.normpath(base / Path(value).expanduser())  # absolute stays absolute; no symlink resolution


def _train_tables(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The [train] table and every phase's, where path settings may be."""
    phases = raw.get("phases") if isinstance(raw.get("phases"), dict) else {}
    tables = [raw.get("train"), *(p.get("train") for p in phases.values() if isinstance(p, dict))]
    return [t for t in tables if isinstance(t, dict)]


def resolve_paths(raw: dict[str, Any], base: Path) -> None:
    """Make the path settings of a pipeline's tables absolute, relative to `base` (in place). Values of the
    wrong type are left for `plan` and the stages' checks to report."""
    base = base.absolute()
    inputs = raw.get("input")
    if isinstance(inputs, dict) and "paths" in inputs:
        paths = inputs["paths"]
        paths = [_absolute(p, base) for p in paths] if isinstance(paths, list) else _absolute(paths, base)
        inputs["paths"] = paths
    vocab = raw.get("vocab")
    if isinstance(vocab, dict) and "from_vocab" in vocab:
        vocab["from_vocab"] = _absolute(vocab["from_vocab"], base)
    evaluate = raw.get("evaluate")
    if isinstance(evaluate, dict):  # its files, and each of its tasks' (trainer/evaluate/multitask.py)
        from trainer.evaluate.multitask import path_entries

        for table, key, _ in list(path_entries(evaluate)):
            table[key] = _absolute(table[key], base)
    for train in _train_tables(raw):
        checkpoint = train.get("checkpoint")
        if isinstance(checkpoint, dict) and "init_from" in checkpoint:
            checkpoint["init_from"] = _absolute(checkpoint["init_from"], base)
        if "checkpoint.init_from" in train:  # a dotted key written as a string (not TOML's dotted syntax)
            train["checkpoint.init_from"] = _absolute(train["checkpoint.init_from"], base)


def check_paths(pipeline: Pipeline) -> None:
    """Every path the pipeline reads exists: a typo fails now, not after the run dir and its lock are made."""
    from corpusprep.read import resolve_inputs

    where = pipeline.source
    if not pipeline.demo_input:
        try:
            resolve_inputs(pipeline.config["input"]["paths"])
        except UsageError as error:
            raise UsageError(f"{where}: input.paths: {error}") from None
    from_vocab = pipeline.config.get("vocab", {}).get("from_vocab")
    if isinstance(from_vocab, str) and not storage.is_file(from_vocab):
        raise UsageError(f"{where}: vocab.from_vocab: {from_vocab}: no such file")
    for train in _train_tables(pipeline.config):
        checkpoint = train.get("checkpoint")
        init = checkpoint.get("init_from") if isinstance(checkpoint, dict) else None
        if isinstance(init, str) and not storage.exists(init):
            raise UsageError(f"{where}: train.checkpoint.init_from: {init}: no such file or directory")
    evaluate = pipeline.config.get("evaluate") or {}
    if evaluate:
        from trainer.evaluate.multitask import path_entries

        for table, key, name in path_entries(evaluate):
            if isinstance(table[key], str) and not storage.exists(table[key]):
                raise UsageError(f"{where}: {name}: {table[key]}: no such file or directory")


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`base` with `over`'s values, table by table (a phase's train.schedule.steps keeps train.schedule.*)."""
    merged = dict(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(base.get(key), dict)
        merged[key] = deep_merge(base[key], value) if both else value
    return merged


def _table(config: dict, key: str, where: str) -> dict[str, Any]:
    value = config.get(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"{where}: [{key}] must be a table")
    return value


def plain_name(name: str, where: str, names: str) -> str:
    """`name` when it can name a directory and nothing else (not a path, not hidden, no control character):
    the pipeline's name (runs/NAME) and every phase's (RUN_DIR/NAME/...) pass here."""
    if not name or name.startswith(".") or any(c in name for c in "/\\") or _CONTROL.search(name):
        raise UsageError(f"{where} {name!r} must be a plain name (no '/', '\\', control character, leading "
                         f"'.' or '..'); it names {names}")
    return name


def check_runner_keys(section: dict[str, Any], where: str) -> None:
    """The [train] keys the runner reads itself (`processes`, `init_from_previous`), checked when the file is
    planned; the trainer's keys are checked by its own checker (`train_stage.TrainStage.check`, which
    `load_pipeline` calls for every stage, whatever --until selects)."""
    for key, (ok, must) in RUNNER_TRAIN_KEYS.items():
        if key in section and not ok(section[key]):
            raise UsageError(f"{where}.{key}: expected {must}, got {section[key]!r}")


def plan(raw: dict[str, Any], source: Path) -> Pipeline:
    """The ordered stages of a pipeline file's tables (pure: reads nothing but `raw`). Every setting is
    checked here or by the stages' own `check` (`load_pipeline` and the runner call it for every stage)."""
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        raise UsageError(f"{source}: unknown section [{unknown[0]}] (known: {', '.join(SECTIONS)})")
    config = copy.deepcopy(raw)
    meta = _table(config, "pipeline", str(source))
    # the default run directory is runs/NAME: a path here would put it anywhere
    name = plain_name(str(meta.get("name") or source.stem), f"{source}: pipeline.name", "the run directory "
                      "runs/NAME")
    seed = meta.get("seed", 12345)
    if not isinstance(seed, int):
        raise UsageError(f"{source}: pipeline.seed must be an integer, not {seed!r}")
    config["pipeline"] = {**meta, "name": name, "seed": seed}

    inputs, read = _inputs(config, source)
    demo = inputs["paths"] == [DEMO_INPUT]

    # Every stage draws from the pipeline seed unless its own table sets one.
    def seeded(section: dict) -> dict:
        return {"seed": seed, **section}

    corpus_need = "corpus" if demo else "input"
    stages = []
    if demo:
        stages.append(Stage("corpus", "corpus", {"max_mb": inputs["demo_mb"]}, {}, "corpus"))
    if "curate" in config:  # the later stages read the curated documents (JSONL, ids kept)
        stages.append(Stage("curate", "curate", {"curate": seeded(_table(config, "curate", str(source))),
                                                 "read": read}, {"corpus": corpus_need}, "curate"))
        corpus_need = "curate"
        read = {**read, "format": "auto", "text_field": "text", "document_per_file": False}
    vocab = _table(config, "vocab", str(source))
    stages.append(Stage("vocab", "vocab", {"vocab": vocab, "read": read}, {"corpus": corpus_need}, "vocab"))

    previous_train = None
    named = _table(config, "phases", str(source))
    for phase, tables in (named or {"": {}}).items():  # no [phases]: one phase of the shared tables
        phase_stages = _phase_stages(config, source, phase, tables, read, seeded, corpus_need, previous_train,
                                     named=bool(named))
        stages += phase_stages
        previous_train = phase_stages[2].name
    if evaluate := _table(config, "evaluate", str(source)):  # the last phase's model, the pipeline's seed
        stages.append(Stage("evaluate", "evaluate", {"evaluate": seeded(evaluate)}, {"train": previous_train},
                            "evaluate"))
    return Pipeline(name, source, config, tuple(stages))


def _inputs(config: dict[str, Any], source: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The [input] table with its defaults (set back into `config`), and its read options resolved."""
    inputs = {**INPUT_DEFAULTS, **_table(config, "input", str(source))}
    if isinstance(inputs["paths"], str):
        inputs["paths"] = [inputs["paths"]]
    unknown = sorted(set(inputs) - set(INPUT_DEFAULTS))
    if unknown:
        raise UsageError(f"{source}: unknown key input.{unknown[0]} (known: {', '.join(INPUT_DEFAULTS)})")
    if not inputs["paths"] or not all(isinstance(p, str) for p in inputs["paths"]):
        raise UsageError(f'{source}: input.paths must be a list of paths (or ["{DEMO_INPUT}"])')
    demo_mb = inputs["demo_mb"]
    number = isinstance(demo_mb, (int, float)) and not isinstance(demo_mb, bool)
    if demo_mb is not None and not (number and demo_mb > 0):
        raise UsageError(f"{source}: input.demo_mb: expected a positive number of MB, got {demo_mb!r}")
    config["input"] = inputs
    if DEMO_INPUT in inputs["paths"] and inputs["paths"] != [DEMO_INPUT]:
        raise UsageError(f"{source}: {DEMO_INPUT} cannot be mixed with other input paths")
    try:  # the CLI's rule for the same options (any case for a choice: "PARQUET")
        read = asdict(ReadOptions(**check_settings(ReadOptions, {k: inputs[k] for k in READ_KEYS}, "input")))
    except UsageError as error:
        message = str(error) if str(error).startswith("input.") else f"input: {error}"
        raise UsageError(f"{source}: {message}") from None
    inputs.update(read)
    return inputs, read


def _phase_stages(config: dict[str, Any], source: Path, phase: str, tables: dict, read: dict, seeded,
                  corpus_need: str, previous_train: str | None, *, named: bool) -> list[Stage]:
    """A phase's pairs -> shard -> train -> plot stages, its tables overriding the shared ones."""
    where = f"{source}: phases.{phase}"
    if named:  # each names a directory of the run dir, as the pipeline's name names the run dir
        plain_name(phase, f"{source}: phase name", "the phase's directory RUN_DIR/NAME")
        if phase in RUN_DIR_NAMES:
            raise UsageError(f"{where}: a phase may not be named {phase!r}: the run dir's {phase} is not "
                             "the phase's")
    if not isinstance(tables, dict) or set(tables) - set(PHASE_SECTIONS):
        raise UsageError(f"{where}: a phase holds only the tables {', '.join(PHASE_SECTIONS)}")
    shared = {s: _table(config, s, str(source)) for s in PHASE_SECTIONS}
    merged = {s: deep_merge(shared[s], _table(tables, s, where)) for s in PHASE_SECTIONS}
    check_runner_keys(merged["train"], f"{where}.train" if phase else f"{source}: train")
    suffix = f"-{phase}" if phase else ""
    prefix = f"{phase}/" if phase else ""
    pairs, shard, train = (f"{kind}{suffix}" for kind in ("pairs", "shard", "train"))
    # A phase after the first starts from the previous phase's weights (BERT: 128 then 512 tokens).
    init = merged["train"].pop("init_from_previous", True) and previous_train
    return [
        Stage(pairs, "pairs", {"pairs": seeded(merged["pairs"]), "read": read},
              {"corpus": corpus_need, "vocab": "vocab"}, f"{prefix}pairs", phase),
        Stage(shard, "shard", {"shard": seeded(merged["shard"])}, {"pairs": pairs, "vocab": "vocab"},
              f"{prefix}shards", phase),
        Stage(train, "train", {"train": seeded(merged["train"])},
              {"shards": shard, "vocab": "vocab", **({"init": previous_train} if init else {})},
              f"{prefix}train", phase),
        Stage(f"plot{suffix}", "plot", {}, {"train": train}, f"{prefix}plot", phase),
    ]


def fingerprint(kind: str, settings: dict[str, Any], inputs: dict[str, str], version: str) -> str:
    """What decides a stage's output: kind, resolved settings, inputs' fingerprints, corpusprep version."""
    from hashlib import sha256

    blob = json.dumps([kind, settings, inputs, version], sort_keys=True, default=str)
    return sha256(blob.encode()).hexdigest()[:16]


def select(stages: tuple[Stage, ...], until: str | None) -> tuple[Stage, ...]:
    """The stages up to `until`: a stage name (that stage and all before it) or a kind (every stage of that
    kind or an earlier one, e.g. `shard` = all data preparation, no training)."""
    if until is None:
        return stages
    names = [s.name for s in stages]
    if until in names:
        return stages[: names.index(until) + 1]
    if until in STAGE_ORDER:
        rank = STAGE_ORDER.index(until)
        return tuple(s for s in stages if STAGE_ORDER.index(s.kind) <= rank)
    raise UsageError(f"--until {until!r}: not a stage ({', '.join(names)}) or stage kind")
