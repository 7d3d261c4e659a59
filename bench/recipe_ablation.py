"""The modern encoder recipe, change by change, at one budget of CPU time (issue 38, item 4).

Each row of ROWS adds one change to the row above; every row pre-trains for the same training time with each
pre-training seed, then is scored by `python -m trainer.evaluate` on each task (its CLI, so the task kinds and
options it gains apply here unchanged). The time is turned into each row's steps once, from its speed on an
idle machine (`speed`, into RESULTS/speeds.json): the runs then take a fixed number of steps, so they give the
same models on a busy machine, or spread over days, as on an idle one (a time budget would not). Rows with no
Hugging Face class (pre-LN with GeGLU and a position table: trainer.evaluate fine-tunes through an export) get
the trainer's own held-out masked-LM loss and accuracy only, which every row also reports (comparable between
rows of the same data: masking rate, vocab and text).

    python bench/recipe_ablation.py speed                                 # idle: each row's sequences/s
    python bench/recipe_ablation.py run --budget 30m --seeds 3            # every row, UD EWT UPOS
    python bench/recipe_ablation.py run --budget 30m --rows recipe mini   # some rows
    python bench/recipe_ablation.py run ... --table-only                   # the records' table so far
    python bench/recipe_ablation.py run ... --task upos --task 'cola=--train C/train.tsv.xz --dev C/dev.tsv'

The data (vocab, packed pairs, shards) is row 1's recipe's (RECIPE: the CPU recipe the ablation began from,
pinned; `--recipe` gives another), built once per masking rate and data change with `corpusprep run --until
shard`; the training settings are its [train] table plus the row's, the fine-tuning settings its [evaluate]
table (`--eval-extra` appends flags, e.g. a dry run's `--epochs 0.05`).
Data, runs and evaluations land under --out (default runs/ablation); a rerun skips what is done (a trainer
run with its marker, an evaluation through evaluate's own -o), so a killed run continues. The random init's
fine-tuning runs are kept in OUT/random-runs (trainer.evaluate --random-runs): the same for every run of one
architecture and vocab, they are made once; `--jobs 2` then evaluates two tasks at once (where they are
not kept yet, it puts four runs on 2 CPUs: 1.25x slower than one evaluation at a time). What the table is
made of goes to --results (default: OUT): speeds.json, and a record of each finished run's scores
(records/RUN.json, named as its run: by what makes it, with this machine's paths left out; an evaluation
by its flags and its files' content). A run with its record is done even where its files are gone, so the
ablation, about 23 hours of a 2-core machine, goes on from machine to machine with
bench/results/recipe_ablation (committed) as --results. The table goes to stdout and to RESULTS/table.md,
the numbers to RESULTS/results.json: every row with a record of the seeds asked for, whichever rows this call
ran.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.yardsticks import PUBLIC_DATA  # noqa: E402
from corpusprep.engine.records import parse_json  # noqa: E402
from corpusprep.engine.rng import stable_hash  # noqa: E402
from corpusprep.engine.storage import write_text  # noqa: E402
from corpusprep.errors import DataError, UsageError  # noqa: E402
from corpusprep.settings import read_toml  # noqa: E402
from trainer.config import PRESET_LR, load_config, parse_duration  # noqa: E402
from trainer.evaluate.summary import spread, t_975  # noqa: E402

RECIPE = REPO / "bench" / "recipe_ablation_row1.toml"  # the CPU recipe the ablation began from, pinned


@dataclass(frozen=True)
class Row:
    name: str
    change: str  # what it adds to the row above, in the table
    train: dict = field(default_factory=dict)  # `--set` values of trainer.run (dotted keys)
    masking: float | None = None  # the shards' masked_lm_prob from this row on (None: the row above's)
    data: dict = field(default_factory=dict)  # `corpusprep run --set` values of the data, from this row on


# Each row adds its change to every row above it (the order of issue 38). The larger preset keeps its own
# learning rate (the recipe states tiny's 1e-3); 30% masking predicts up to 20 of 64 tokens; `rotary`
# completes ModernBERT's layout (its embedding LayerNorm, no segments, eps 1e-5): the `modern-mini` preset;
# the schedule is warm-up-stable-decay with a 1-sqrt cooldown over the last 20% (Hagele et al. 2024); the
# ramp keeps the final batch of 64 (as micro-batches of 16, so the ramp has whole ones to add) and starts at a
# quarter of it, as Cramming's rises over the run's first part. `cased` keeps case in the vocab and the text,
# as Google's README advises where case carries information (NER, part-of-speech tags: two of the tasks).
ROWS = [
    Row("recipe", "the CPU recipe it began from (tiny, post-LN BERT)", masking=0.15),
    Row("mini", "the mini preset (L4/H256) at the same time", {"model.preset": "mini",
                                                                 "optim.lr": PRESET_LR["mini"]}),
    Row("mask-30", "30% masking (MosaicBERT)", masking=0.30),
    Row("pre-ln", "pre-LN + final LayerNorm", {"model.pre_ln": True}),
    Row("geglu", "GeGLU MLP (as many weights)", {"model.mlp": "geglu"}),
    Row("no-bias", "no biases", {"model.bias": False}),
    Row("rotary", "rotary positions (+ embedding norm, no segments: ModernBERT's layout)",
        {"model.position": "rotary", "model.embedding_norm": True, "model.type_vocab_size": 0,
         "model.layer_norm_eps": 1e-5}),
    Row("wsd", "warm-up-stable-decay, 1-sqrt over the last 20%",
        {"schedule.decay_fraction": 0.2, "schedule.decay_shape": "1-sqrt"}),
    Row("batch-ramp", "batch ramp: 16 rows a step rising to 64 at 25% of the run",
        {"data.batch_size": 16, "schedule.grad_accum": 4, "schedule.batch_ramp_fraction": 0.25,
         "schedule.batch_ramp_start": 0.25}),
    Row("cased", "cased vocab and text (BERT-cased)", data={"vocab.cased": True}),
]
BY_NAME = {row.name: row for row in ROWS}
ROWS_HELP = f"of {', '.join(BY_NAME)} (default: every row)"


def data_changes(upto: Row) -> dict:
    """The data settings the rows up to `upto` change (`corpusprep run --set` keys)."""
    return {key: value for row in ROWS[: ROWS.index(upto) + 1] for key, value in row.data.items()}


def flat(table: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in table.items():
        out |= flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
    return out


def settings(literal: dict) -> list[str]:
    """`--set key=value` arguments, values as TOML/JSON literals."""
    return [arg for key, value in literal.items() for arg in ("--set", f"{key}={json.dumps(value)}")]


def run(command: list[str], log: Path) -> None:
    """A command, its output appended to `log`; a failure stops the bench with the log's tail."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{tail}")


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args, self.out = args, Path(args.out).resolve()
        self.results = Path(getattr(args, "results", None) or self.out).resolve()
        self.data = Path(getattr(args, "data", None) or PUBLIC_DATA).resolve()
        self.recipe = read_toml(Path(args.recipe), "recipe")
        self.python = [sys.executable]

    def key(self, name: str, *settings) -> str:
        """`name` and 8 hex digits of what it was made with, this machine's paths as names (OUT, DATA, REPO,
        ..): the same run has the same name, so the same record, on any machine."""
        return f"{name}-{stable_hash(self.portable(settings)) >> 32:08x}"

    def portable(self, value) -> str:
        """`value` as JSON with this machine's paths as names: OUT, DATA, REPO and .. (its folder), each where
        a path is whole or starts a longer one, never inside a name (/work in /workspace); never the root."""
        text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
        for path, alias in ((self.out, "OUT"), (self.data, "DATA"), (REPO, "REPO"), (REPO.parent, "..")):
            if path.parent != path:
                quoted = re.escape(json.dumps(str(path), ensure_ascii=False)[1:-1])
                text = re.sub(rf'(?<![^\s"=]){quoted}(?=[/\s"]|$)', alias, text)
        return text

    def shard_run(self, masking: float, changed: dict) -> tuple[Path, dict]:
        """The pipeline run dir of the recipe's shards at this masking rate and with these data settings (its
        pairs, vocab and seeds otherwise), and the `corpusprep run --set` values that make them."""
        name, changed = f"data-mask{round(masking * 100)}", flat(self.args.data_set) | changed
        length = changed.get("pairs.max_seq_length", self.recipe["pairs"]["max_seq_length"])
        data = {"shard.masked_lm_prob": masking,
                "shard.max_predictions_per_seq": math.ceil(masking * length)} | changed
        return self.out / (self.key(name, changed) if changed else name), data

    def shards(self, masking: float, changed: dict) -> Path:
        """The recipe's shards at this masking rate and with these data settings, built once. Shards found
        under the name are used only if they were built from the same data settings (their pipeline.json;
        the recipe file is read again): the runs are named after the shards' path, so other shards there
        would pass for these."""
        run_dir, data = self.shard_run(masking, changed)
        if (run_dir / "shards" / "manifest.json").is_file():
            if differ := data_differences(run_dir, self.args.recipe, settings(data)[1::2]):
                sys.exit(f"{run_dir}: built from other data settings ({', '.join(differ)}) than "
                         f"{self.args.recipe} gives now; give another --out")
            return run_dir / "shards"
        command = [str(Path(sys.executable).parent / "corpusprep"), "run", str(self.args.recipe),
                   "--run-dir", str(run_dir), "--until", "shard", "--no-progress", *settings(data)]
        print(f"data: masking {masking:.0%} -> {run_dir}", flush=True)
        run(command, self.out / "logs" / f"{run_dir.name}.log")
        return run_dir / "shards"

    def train_settings(self, upto: Row) -> tuple[dict, float]:
        """The trainer's settings of a row (the recipe's [train] and each row's changes up to it) and the
        row's masking rate."""
        values, masking = flat(self.recipe["train"]), 0.15
        for row in ROWS[: ROWS.index(upto) + 1]:
            values |= row.train
            masking = row.masking if row.masking is not None else masking
        return values, masking

    def data_of(self, upto: Row, build: bool = True) -> Path:
        """The row's shards: its masking rate and the data changes of the rows up to it (built unless not
        `build`: a name, for a run that may have its record)."""
        masking, changed = self.train_settings(upto)[1], data_changes(upto)
        return self.shards(masking, changed) if build else self.shard_run(masking, changed)[0] / "shards"

    def scorer(self, values: dict) -> str:
        """Who scores a row's model: "evaluate" (trainer.evaluate fine-tunes its export), or why only the
        held-out masked LM does: no Hugging Face class computes it, or trainer.evaluate builds another class
        from its export (it built Bert* classes from any export before it took transformers' Auto classes:
        a silently fresh encoder, never a score)."""
        from trainer.hf_families import family_of

        objective = self.recipe["pairs"]["objective"]
        model = config_of(values).model.bert_config(vocab_size=300, objective=objective)
        try:
            family = family_of(model)
        except UsageError:
            return "no HF class"
        return "evaluate" if evaluate_builds(model) else f"evaluate cannot read {family.title} yet"

    def pretraining(self, row: Row, seed: int) -> tuple[Path, list[str]]:
        """The run's directory, named by everything that makes its model (settings, steps, shards and the
        recipe's data tables as written: a rerun with another budget or recipe is another run, never a
        finished one reused, on this machine or from its record), and its command."""
        values, _ = self.train_settings(row)
        values |= {"schedule.steps": self.steps(row), "seed": seed}
        shards = str(self.data_of(row, build=False))
        data = {table: self.recipe.get(table) for table in DATA_TABLES}
        run_dir = self.out / "runs" / self.key(f"{row.name}-seed{seed}", values, shards, data)
        return run_dir, [*self.python, "-m", "trainer.run", "--shards", shards, "--run-dir", str(run_dir),
                         *settings(values)]

    def pretrain(self, row: Row, seed: int) -> Path:
        run_dir, command = self.pretraining(row, seed)
        marker = run_dir.with_name(run_dir.name + ".done")
        if not marker.exists():
            self.data_of(row)  # built, or checked
            command += ["--resume"] if run_dir.exists() else []
            print(f"{row.name} seed {seed}: pre-training {self.steps(row):,} steps", flush=True)
            run(command, self.out / "logs" / f"{run_dir.name}.log")
            marker.write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"))
        return run_dir

    def steps(self, row: Row) -> int:
        """The row's steps in --budget at its idle speed (RESULTS/speeds.json)."""
        speeds = read_speeds(self.results)["rows"]
        if row.name not in speeds:
            sys.exit(f"{self.results / 'speeds.json'}: no speed of row {row.name!r}: run `speed --rows "
                     f"{row.name}` on an idle machine")
        values, _ = self.train_settings(row)
        return steps_in(parse_duration(self.args.budget), speeds[row.name]["seq_per_s"], values)

    def evaluation(self, run_dir: Path, task: str) -> tuple[Path, list[str]]:
        """trainer.evaluate's output directory for one run on one task, named by its flags and the content of
        the files they read (a rerun with other fine-tuning settings or data is another evaluation), and its
        command."""
        recipe = self.recipe.get("evaluate", {})  # its settings; the task's files come from the task
        common = [arg for key, value in recipe.items() if key not in ("train", "dev", "test")
                  for arg in (f"--{key.replace('_', '-')}", str(value))]
        flags = [*self.tasks[task], *common, *self.args.eval_extra.split()]
        out = self.out / "evaluations" / self.key(f"{run_dir.name}-{task}", flags, self.inputs[task])
        shared = ["--random-runs", str(self.out / "random-runs")]  # the same numbers: not in the name
        return out, [*self.python, "-m", "trainer.evaluate", str(run_dir), *flags, "-o", str(out), *shared]

    def evaluate(self, run_dir: Path, task: str) -> dict:
        """trainer.evaluate's record for one pre-trained run on one task (its -o: a rerun reuses it)."""
        out, command = self.evaluation(run_dir, task)
        if not any(out.rglob("evaluation.json")):
            print(f"{run_dir.name}: evaluating on {task}", flush=True)
            run(command, self.out / "logs" / f"{out.name}.log")
        # a GLUE task goes through --glue: the suite writes its record in the task's own folder
        return json.loads(next(out.rglob("evaluation.json")).read_text())

    def scored(self, row: Row, seed: int, scorer: str) -> dict:
        """A run's held-out masked LM and its score on each task, from its record (RESULTS/records) where it
        has them; else pre-trained (or resumed, or again where its files are gone) and evaluated, each result
        recorded as it comes. A record is of one model: a run made again that gives other weights (another
        machine's arithmetic) starts a new one."""
        record, names = self.record(row, seed), self.evaluation_names(row, seed, scorer)
        if record is None or any(name not in record["evaluations"] for name in names.values()):
            run_dir = self.pretrain(row, seed)
            path, model = self.record_path(row, seed), weights_digest(run_dir)
            if record is None or record["model"] != model:
                record = {"row": row.name, "seed": seed, "model": model, "held_out": held_out(run_dir),
                          "machine": this_machine(), "evaluations": {}}
                write_text(path, json.dumps(record, indent=2) + "\n")
            todo = {name: task for task, name in names.items() if name not in record["evaluations"]}
            with ThreadPoolExecutor(self.args.jobs) as pool:  # each a process; recorded as it ends
                running = {pool.submit(self.evaluate, run_dir, task): name for name, task in todo.items()}
                try:
                    for done in as_completed(running):
                        name = running[done]
                        record["evaluations"][name] = {"task": todo[name], **task_score(done.result()),
                                                       "machine": this_machine()}
                        write_text(path, json.dumps(record, indent=2) + "\n")
                except BaseException:  # a failed evaluation (its log's tail) stops the bench: none started
                    pool.shutdown(cancel_futures=True)
                    raise
        return found_in(record, names)

    def record_path(self, row: Row, seed: int) -> Path:
        return self.results / "records" / f"{self.pretraining(row, seed)[0].name}.json"

    def record(self, row: Row, seed: int) -> dict | None:
        """The run's record, if it has one (checked: it may come from another machine, or be edited)."""
        path = self.record_path(row, seed)
        return read_record(path, row.name, seed) if path.is_file() else None

    def recorded(self, row: Row, seed: int, scorer: str) -> dict | None:
        """What the run's record holds for this call's tasks (those evaluated with its flags), or None: a
        row this call did not run, in the table from its records."""
        if row.name not in read_speeds(self.results)["rows"] or not (record := self.record(row, seed)):
            return None
        names = self.evaluation_names(row, seed, scorer)
        return found_in(record, {task: name for task, name in names.items() if name in record["evaluations"]})

    def evaluation_names(self, row: Row, seed: int, scorer: str) -> dict[str, str]:
        """Task -> the name of the run's evaluation on it (none for a row not fine-tuned)."""
        run_dir = self.pretraining(row, seed)[0]
        return {task: self.evaluation(run_dir, task)[0].name for task in self.tasks if scorer == "evaluate"}

    @functools.cached_property
    def inputs(self) -> dict[str, list[str]]:
        """Task name -> the SHA-256 of each file its flags read."""
        return {task: [file_digest(path) for path in files_read(flags)] for task, flags in self.tasks.items()}

    @functools.cached_property
    def tasks(self) -> dict[str, list[str]]:
        """Task name -> trainer.evaluate's task flags: a yardstick by name, or NAME=FLAGS."""
        chosen = {}
        from bench.yardsticks import YARDSTICKS

        for spec in self.args.task or ["upos"]:
            name, _, flags = spec.partition("=")
            if not flags and name not in YARDSTICKS:
                sys.exit(f"--task {name!r}: a task of bench/yardsticks.py ({', '.join(YARDSTICKS)}), or "
                         "NAME=trainer.evaluate's task flags")
            chosen[name] = flags.split() if flags else yardstick(name, self.data, self.out)
        return chosen


def yardstick(name: str, data: Path, out: Path) -> list[str]:
    """trainer.evaluate's flags for a task of bench/yardsticks.py: its files (DATA, ../shared), capped as
    there (the same seeded samples as the yardsticks' table) into OUT/data, a GLUE task through --glue."""
    from types import SimpleNamespace

    from bench import yardsticks

    files = yardsticks.task_files(name, data, out)
    if files is None:
        sys.exit(f"task {name}: its files are not in {data} (bench/yardsticks.py says where they come from)")
    caps = SimpleNamespace(train_caps=yardsticks.CAPS, dev_caps=yardsticks.DEV_CAPS)
    kept, _ = yardsticks.prepared(name, files, caps, out)
    if glue := yardsticks.YARDSTICKS[name].glue:
        return ["--glue", str(out / "data" / "glue"), "--glue-tasks", glue]
    return [*(flag for split, path in kept.items() for flag in (f"--{split}", str(path))),
            *yardsticks.YARDSTICKS[name].flags]


DATA_TABLES = ("pipeline", "input", "vocab", "pairs", "shard")  # what the shards are made from


def data_differences(run_dir: Path, recipe: Path, overrides: list[str]) -> list[str]:
    """The data settings (`table.key`) in which the pipeline run in `run_dir` differs from `recipe` with
    `overrides`, as `corpusprep run` resolves them; a run dir without its pipeline.json differs in all."""
    from pipelines.load import load_pipeline

    wanted = json.loads(json.dumps(load_pipeline(recipe, overrides, check_inputs=False).config, default=str))
    path = run_dir / "pipeline.json"
    built = parse_json(path.read_bytes(), path) if path.is_file() else {}
    differ = []
    for table in DATA_TABLES:
        ours, theirs = wanted.get(table, {}), built.get(table)
        if not isinstance(theirs, dict):
            differ.append(table)
            continue
        differ += [f"{table}.{key}" for key in sorted(set(ours) | set(theirs))
                   if ours.get(key) != theirs.get(key)]
    return differ


def read_speeds(results: Path) -> dict:
    path = results / "speeds.json"
    return parse_json(path.read_bytes(), path) if path.is_file() else {"rows": {}}


SCORE = 1e6  # bounds of a recorded number: any metric, loss or baseline lies well within them


def read_record(path: Path, row: str, seed: int) -> dict:
    """A run's record (`Bench.scored`), checked field by field: it may come from another machine, or be
    edited; a number the table could not print (NaN, infinite, beyond SCORE) or text that would break its
    lines is one DataError naming the file."""
    record = parse_json(path.read_bytes(), path)

    def check(value, fields: dict, what: str) -> None:
        if not isinstance(value, dict):
            raise DataError(f"{path}: {what} is not an object")
        for key, kind in fields.items():
            found = value.get(key)
            if kind is str:
                ok = isinstance(found, str) and found.isprintable() and "|" not in found
            elif kind is int:
                ok = isinstance(found, int) and not isinstance(found, bool) and 0 <= found < SCORE ** 2
            else:
                # false for NaN and infinities too; a huge int compares without becoming a float
                ok = isinstance(found, (int, float)) and not isinstance(found, bool) and abs(found) <= SCORE
            if not ok:
                raise DataError(f"{path}: {what}.{key} is not {'text' if kind is str else 'a number'} it "
                                "can hold")

    check(record, {"row": str, "seed": int, "model": str}, "the record")
    if (record["row"], record["seed"]) != (row, seed):
        raise DataError(f"{path}: the record of {record['row']} seed {record['seed']}, not of {row} seed "
                        f"{seed}")
    check(record.get("held_out"), {"steps": int, "val_mlm_loss": float, "val_mlm_acc": float}, "held_out")
    check(record.get("evaluations"), {}, "evaluations")
    for name, score in record["evaluations"].items():
        check(score, {"task": str, "split": str, "pretrained": float, "random": float, "baseline": float,
                      "baseline_name": str}, f"evaluations.{name}")
        if "dev" in score:  # records made before the choice on dev have none
            check(score, {"dev": float}, f"evaluations.{name}")
    return record


def found_in(record: dict, names: dict[str, str]) -> dict:
    """A record's held-out masked LM and the scores of the evaluations `names` (task -> name)."""
    return record["held_out"] | {task: record["evaluations"][name] for task, name in names.items()}


def files_read(flags: list[str]) -> list[Path]:
    """The files trainer.evaluate's task flags read: each flag that is a file, and a --glue directory's
    tasks (--glue-tasks, else all)."""
    files = [Path(flag) for flag in flags if Path(flag).is_file()]
    if "--glue" in flags:
        glue = Path(flags[flags.index("--glue") + 1])
        tasks = (flags[flags.index("--glue-tasks") + 1].split(",") if "--glue-tasks" in flags
                 else sorted(p.name for p in glue.iterdir() if p.is_dir()))
        files += sorted(path for task in tasks for path in (glue / task).glob("*") if path.is_file())
    return files


def file_digest(path: Path) -> str:
    with open(path, "rb") as data:
        return hashlib.file_digest(data, "sha256").hexdigest()


def weights_digest(run_dir: Path) -> str:
    """SHA-256 of the run's final weights (each tensor's name, shape and bytes): what a record is of."""
    import torch
    from safetensors import safe_open

    from trainer.checkpoint import latest

    digest = hashlib.sha256()
    with safe_open(latest(run_dir) / "weights.safetensors", framework="pt") as weights:
        for name in sorted(weights.keys()):
            tensor = weights.get_tensor(name).contiguous()
            digest.update(f"{name}{list(tensor.shape)}{tensor.dtype}".encode())
            digest.update(tensor.view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def steps_in(seconds: float, seq_per_s: float, values: dict) -> int:
    """The steps that take `seconds` at `seq_per_s`: the sequences it reads, in the row's batches (fewer
    a step early on with a batch ramp: trainer.optim.micro_batches, as the trainer takes them)."""
    from trainer.optim import micro_batches

    schedule = config_of(values).schedule
    micro, total = values["data.batch_size"], seconds * seq_per_s

    def reads(steps: int) -> int:
        return micro * sum(micro_batches(i / steps, schedule) for i in range(steps))

    low, high = 1, max(1, math.ceil(total / micro))  # at most one micro-batch a step
    while low < high:  # the fewest steps that read the sequences
        middle = (low + high) // 2
        low, high = (middle + 1, high) if reads(middle) < total else (low, middle)
    return low


def config_of(values: dict):
    """The trainer's config of dotted-key settings, read as `trainer.run --set` reads them."""
    return load_config(overrides=[f"{key}={json.dumps(value)}" for key, value in values.items()])


def evaluate_builds(config) -> bool:
    """Whether trainer.evaluate fine-tunes an export of `config` as the export's own class with its weights
    (a random model of it exported to a temporary directory; a second or so)."""
    import tempfile
    from types import SimpleNamespace

    import torch
    from safetensors.torch import load_file

    from trainer.checkpoint import save_model
    from trainer.evaluate.finetune import build_model
    from trainer.evaluate.tasks import task_kind
    from trainer.export import export
    from trainer.hf_families import family_of
    from trainer.model import BertForPreTraining

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "vocab").mkdir()
        (root / "model").mkdir()
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        words = [f"w{i}" for i in range(config.vocab_size - len(specials))]
        (root / "vocab" / "vocab.txt").write_text("\n".join(specials + words) + "\n")
        model = BertForPreTraining(config)
        save_model(root / "model", model.state_dict(), {"model": asdict(config), "train": {}})
        out = export(root / "model", root / "hf", root / "vocab")
        task = SimpleNamespace(task=task_kind("tag"), labels=("a", "b"))  # what build_model reads of TaskData
        built = build_model(out, task, "pretrained", seed=0).state_dict()
        family = family_of(config)
        encoder = {k: v for k, v in load_file(out / "model.safetensors").items()
                   if k.startswith(family.bare[0]) and not k.startswith(family.heads)}
        return all(k in built and torch.equal(built[k], v) for k, v in encoder.items())


@functools.cache  # one machine per process: read once, not at every record write
def this_machine() -> str:
    """The CPU that made a record's numbers: two machines' kernels round differently, so the same run gives
    weights, and a random init's fine-tuning scores, that differ slightly (0.006 of UPOS seen)."""
    import torch

    cpuinfo = Path("/proc/cpuinfo")
    names = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.M) if cpuinfo.is_file() else []
    return f"{names[0] if names else platform.processor()} ({torch.backends.cpu.get_cpu_capability()})"


def held_out(run_dir: Path) -> dict:
    """The run's last held-out masked-LM record and its steps (metrics.jsonl)."""
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line]
    last = [r for r in records if "val_mlm_loss" in r][-1]
    return {"steps": max(r.get("step", 0) for r in records), "val_mlm_loss": last["val_mlm_loss"],
            "val_mlm_acc": last["val_mlm_acc"]}


def task_score(record: dict) -> dict:
    """The scored split (test if given), the pre-trained model's and the random init's mean scores over the
    fine-tuning seeds, and the task kind's cheap baseline (most frequent tag, all O, majority class...)."""
    split = "test" if "test" in record["splits"] else "dev"
    scores = record["splits"][split]
    return {"split": split, "pretrained": scores["pretrained"]["mean"], "random": scores["random"]["mean"],
            "baseline": scores["baseline"], "baseline_name": record["baseline_name"],
            "dev": record["splits"]["dev"]["pretrained"]["mean"]}  # what the recipe is chosen on


def median_range(values: list[float], note: str = "") -> str:
    """`median [min, max] (note)` over the pre-training seeds (trainer.evaluate's `spread`), or
    `value (1 seed; note)`."""
    if len(values) < 2:
        return f"{values[0]:.4f} (1 seed{'; ' + note if note else ''})"
    found = spread(values)
    return f"{found['median']:.4f} [{found['min']:.4f}, {found['max']:.4f}]" + (f" ({note})" if note else "")


def verdict(now: list[float], before: list[float] | None) -> str:
    """The change against the row above (pre-training seeds): the mean difference ± its standard error, and
    Welch's t-test at 95% (Welch-Satterthwaite degrees of freedom, rounded down), as trainer.evaluate judges
    pre-training at 95%: "helps" or "hurts" where the interval excludes 0, else "noise"."""
    if not before or len(now) < 2 or len(before) < 2:
        return ""
    diff = statistics.fmean(now) - statistics.fmean(before)
    a, b = statistics.variance(now) / len(now), statistics.variance(before) / len(before)
    se = math.sqrt(a + b)
    df = (a + b) ** 2 / (a**2 / (len(now) - 1) + b**2 / (len(before) - 1)) if se else 1  # >= 1 (Welch)
    half = t_975(max(1, math.floor(df))) * se
    call = "helps" if diff > half else "hurts" if diff < -half else "noise"
    return f"{diff:+.4f} ± {se:.4f} {call}"


def run_rows(args: argparse.Namespace) -> int:
    """Pre-train and score the rows asked for, then tabulate every row with records of these seeds."""
    bench = Bench(args)
    asked = [] if args.table_only else [BY_NAME[name] for name in args.rows] if args.rows else ROWS
    seeds = [args.first_seed + i for i in range(args.seeds)]
    # the tasks in --task's order: portable() sorts a dict's keys
    tasks = {task: json.loads(bench.portable(flags)) for task, flags in bench.tasks.items()}
    results: dict = {"budget": args.budget, "speeds_measured": read_speeds(bench.results).get("measured"),
                     "seeds": seeds, "tasks": tasks, "rows": {}}
    for row in ROWS:
        values, masking = bench.train_settings(row)
        scorer = bench.scorer(values)
        found = {seed: bench.scored(row, seed, scorer) if row in asked else bench.recorded(row, seed, scorer)
                 for seed in seeds}
        if runs := {seed: run for seed, run in found.items() if run is not None}:
            results["rows"][row.name] = {"change": row.change, "masking": masking, "data": data_changes(row),
                                         "scorer": scorer, "seeds": runs}
            write(results, bench.results)
    if not results["rows"]:  # only where nothing was asked: a run writes its record or fails
        raise UsageError(f"{bench.results / 'records'}: no record of these seeds, budget and tasks: no table")
    print(write(results, bench.results))
    return 0


def write(results: dict, out: Path) -> str:
    """The table (markdown) and results.json; returns the table."""
    tasks = list(results["tasks"])
    scored = [r for entry in results["rows"].values() for r in entry["seeds"].values()]
    found = {task: next((r[task] for r in scored if task in r), None) for task in tasks}
    heads = [f"{task} ({found[task]['split']})" if found[task] else task for task in tasks]
    head = ["row", "change", "seeds", "steps", "held-out MLM acc", *heads, "held-out MLM: vs row above",
            *[f"{t}: vs row above" for t in tasks]]
    baselines = "; ".join(f"{t}: {f['baseline_name']} {f['baseline']:.4f}" for t, f in found.items() if f)
    lines = [f"Budget {results['budget']} of training per run, as steps at each row's idle speed (measured "
             f"{results['speeds_measured']}); pre-training seeds {results['seeds']}. A score is the "
             "pre-trained model's (trainer.evaluate's mean over its fine-tuning seeds; test split if given, "
             "else dev), median [min, max] over the pre-training seeds, then the same architecture "
             "randomly initialised (median); a change against the row above is the difference of the means "
             "± its standard error, which helps or hurts where Welch's 95% interval excludes 0 (a task's "
             "against the last row above scored on it; the held-out MLM accuracy's only where masking and "
             "data are the same). "
             f"Cheap baselines, the same for every row: {baselines or 'none scored yet'}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    before: dict[str, tuple[str, list[float]]] = {}  # task -> the last row scored on it, its scores
    above_name, above = "", None
    for name, entry in results["rows"].items():
        runs = list(entry["seeds"].values())
        steps = statistics.fmean(r["steps"] for r in runs)
        accs = [r["val_mlm_acc"] for r in runs]
        # accuracy at another masking rate or vocab is another measure: no verdict across them
        alike = above is not None and all(above.get(k) == entry.get(k) for k in ("masking", "data"))
        accs_above = [r["val_mlm_acc"] for r in above["seeds"].values()] if alike else None
        cells, deltas = [], [verdict(accs, accs_above)]
        for task in tasks:
            done = [r[task] for r in runs if task in r]
            if entry["scorer"] != "evaluate" or not done:
                cells.append(entry["scorer"] if entry["scorer"] != "evaluate" else "not scored yet")
                deltas.append("")
                continue
            scores = [score["pretrained"] for score in done]
            random = statistics.median(score["random"] for score in done)
            missing = f"; {len(done)} of {len(runs)} seeds" if len(done) < len(runs) else ""
            cells.append(median_range(scores, f"random {random:.4f}{missing}"))
            last, previous = before.get(task, ("", None))
            call = verdict(scores, previous)  # against a row further up where those between have no score
            deltas.append(call + (f" (vs {last})" if call and last != above_name else ""))
            before[task] = (name, scores)
        above_name, above = name, entry
        data = "".join(f", {key}={json.dumps(value)}" for key, value in entry.get("data", {}).items())
        change = f"{entry['change']} (masking {entry['masking']:.0%}{data})"
        lines.append(f"| {name} | {change} | {len(runs)} | {steps:,.0f} | {median_range(accs)} | "
                     + " | ".join(cells + deltas) + " |")
    choice, results["chosen_on_dev"] = on_dev(results["rows"], tasks)
    table = "\n".join(lines + choice) + "\n"
    write_text(out / "table.md", table)
    write_text(out / "results.json", json.dumps(results, indent=2) + "\n")
    return table


# What the recipe is for (issue 38's goal: UD EWT tags and entity F1). GLUE at these sizes sits at its floor
# (CoLA's MCC 0 for most rows, one seed's 0.05 above it in another): averaged in, it chose a row that hurts
# both goals beyond seed noise. It is reported beside them, not chosen on.
CHOOSE_ON = ("upos", "ner")


def on_dev(rows: dict, tasks: list[str]) -> tuple[list[str], str | None]:
    """The rows' dev scores and their average over the tasks of CHOOSE_ON that were run (else over every
    task), and the row with the highest: the recipe is chosen on dev, so the test scores above are reported,
    never chosen on. A row's average is the median over its seeds scored on dev for every task."""
    if not tasks:
        return [], None
    chosen_on = [task for task in tasks if task in CHOOSE_ON] or tasks
    which = ", ".join(chosen_on)
    lines = ["", f"Chosen on dev: the highest average of the pre-trained model's dev scores on {which} "
             "(median over the seeds scored on dev on every task).", "",
             "| row | seeds | " + " | ".join(f"{task} (dev)" for task in tasks) + f" | average ({which}) |",
             "|" + "---|" * (len(tasks) + 3)]
    averages = {}
    for name, entry in rows.items():
        runs = [run for run in entry["seeds"].values() if all("dev" in run.get(task, {}) for task in tasks)]
        if entry["scorer"] != "evaluate" or not runs:
            continue
        per_seed = [statistics.fmean(run[task]["dev"] for task in chosen_on) for run in runs]
        averages[name] = statistics.median(per_seed)
        cells = [f"{statistics.median(run[task]['dev'] for run in runs):.4f}" for task in tasks]
        lines.append(f"| {name} | {len(runs)} of {len(entry['seeds'])} | {' | '.join(cells)} | "
                     f"{averages[name]:.4f} |")
    if not averages:
        return [], None
    ranked = sorted(averages, key=averages.get, reverse=True)
    margin = f", {averages[ranked[0]] - averages[ranked[1]]:.4f} above {ranked[1]}" if len(ranked) > 1 else ""
    return [*lines, "", f"Chosen: {ranked[0]}{margin}."], ranked[0]


def speed(args: argparse.Namespace) -> int:
    """Each row's sequences/s on its shards at its settings (a batch ramp off: its full batch), over
    `--steps` steps after the first progress window (which holds start-up), into RESULTS/speeds.json: what
    `run` turns the budget into steps with. Measure on an idle machine; the load is recorded beside the
    speeds."""
    bench = Bench(args)
    speeds, load = read_speeds(bench.results), os.getloadavg()[0]
    if load > 0.5:
        print(f"warning: load average {load:.1f}: the speeds, so every row's steps, will be low", flush=True)
    print("| row | steps/s | sequences/s | tokens/s |\n|---|---|---|---|", flush=True)
    for row in [BY_NAME[name] for name in args.rows] if args.rows else ROWS:
        values, _ = bench.train_settings(row)
        values |= {"schedule.steps": args.steps, "schedule.batch_ramp_fraction": 0.0, "eval.every": 0,
                   "eval.max_batches": 1, "logging.every": max(1, args.steps // 6),
                   "checkpoint.every": args.steps}
        run_dir = bench.out / "speed" / f"{row.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        run([*bench.python, "-m", "trainer.run", "--shards", str(bench.data_of(row)), "--run-dir",
             str(run_dir), *settings(values)], bench.out / "logs" / f"speed-{row.name}.log")
        records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        windows = [r for r in records if "seq_per_s" in r][1:]  # the first window holds start-up
        if not windows:
            sys.exit(f"speed: {args.steps} steps left no progress window after start-up; give more --steps")
        seqs = statistics.fmean(r["seq_per_s"] for r in windows)
        tokens = statistics.fmean(r["tokens_per_s"] for r in windows)
        batch = values["data.batch_size"] * values.get("schedule.grad_accum", 1)
        speeds["rows"][row.name] = {"seq_per_s": seqs, "tokens_per_s": tokens, "load": load}
        print(f"| {row.name} | {seqs / batch:.2f} | {seqs:,.0f} | {tokens:,.0f} |", flush=True)
    speeds["measured"] = f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, {platform.machine()}"
    write_text(bench.results / "speeds.json", json.dumps(speeds, indent=2) + "\n")
    return 0


def at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number, at least 1")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/ablation", help="where data, runs and evaluations go")
    p.add_argument("--results", help="where speeds.json, the runs' records and the table go (default: OUT; "
                   "bench/results/recipe_ablation holds the ablation's so far)")
    p.add_argument("--recipe", type=Path, default=RECIPE, help="the pipeline file of row 1's settings")
    p.add_argument("--data-set", type=json.loads, default={}, metavar="JSON",
                   help='settings of the data stages, e.g. \'{"input": {"paths": ["small.txt"]}}\'')
    sub = p.add_subparsers(dest="command", required=True)
    rows = sub.add_parser("run", help="pre-train and score rows")
    rows.add_argument("--budget", default="30m", help="training time of every run, as steps at each row's "
                      "speed (default 30m)")
    rows.add_argument("--seeds", type=int, default=3, help="pre-training seeds per row (default 3)")
    rows.add_argument("--first-seed", type=int, default=12345, help="the recipe's seed, then +1, +2 ...")
    rows.add_argument("--rows", nargs="+", choices=list(BY_NAME), metavar="ROW", help=ROWS_HELP)
    rows.add_argument("--task", action="append", metavar="NAME[=FLAGS]",
                      help="a task of bench/yardsticks.py by name (upos, ner, cola, sts-b, ...) or "
                      "NAME=trainer.evaluate's task flags; repeatable (default: upos)")
    rows.add_argument("--data", default=str(PUBLIC_DATA), help="bench/yardsticks.py's --data: the public "
                      "copies of its tasks (default %(default)s)")
    rows.add_argument("--eval-extra", default="", help="flags appended to every trainer.evaluate call")
    rows.add_argument("--jobs", type=at_least_one, default=1, metavar="N", help="a run's evaluations at "
                      "once, each a trainer.evaluate process (default 1; 2 keeps 2 CPUs busy where its "
                      "random runs are reused, and overloads them where they are not); the scores do not "
                      "depend on it")
    rows.add_argument("--table-only", action="store_true", help="run nothing: the table of the records "
                      "there are (the same flags name the same runs)")
    rows.set_defaults(handler=run_rows)
    pace = sub.add_parser("speed", help="each row's sequences/s (on an idle machine), for run's steps")
    pace.add_argument("--rows", nargs="+", choices=list(BY_NAME), metavar="ROW", help=ROWS_HELP)
    # 60 steps gave two rows of the same shapes 81 and 86 sequences/s; 150 gave them 86 and 87 (2026-12-06)
    pace.add_argument("--steps", type=int, default=150, help="steps run per row (default 150)")
    pace.set_defaults(handler=speed)
    args = p.parse_args(argv)
    try:
        return args.handler(args)
    except (DataError, UsageError) as error:  # a bad file or recipe: one line, as the commands say it
        sys.exit(str(error))


if __name__ == "__main__":
    sys.exit(main())
