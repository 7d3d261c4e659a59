"""The paper's yardsticks for a model of ours: UD English-EWT UPOS, CoNLL-2003 NER, a reduced SQuAD v1.1 and
GLUE tasks, each through `python -m trainer.evaluate` (the model beside the same architecture randomly
initialised, the same seeds, the epoch chosen on dev, the median over seeds), with the wall time of each on
this machine, as a table for BENCHMARKS.md. `estimate` times a few steps of each task and says what the run
will cost before it is made; `converge` gives dev accuracy per epoch on UD EWT at several learning rates,
which is how the tiny preset's defaults in trainer/evaluate/settings.py were chosen.

    python bench/yardsticks.py estimate MODEL [--seeds 3]      # each task's cost, from a short timing
    python bench/yardsticks.py MODEL [--seeds 3] [-o OUT]      # the table (default tasks, capped to fit)
    python bench/yardsticks.py MODEL --tasks squad,mrpc --max-train squad=2000 --seeds 3 -o OUT
    python bench/yardsticks.py MODEL --quick 200 --seeds 1 --epochs 1 -o OUT   # a dry run
    python bench/yardsticks.py converge MODEL --lrs 3e-4,1e-3,3e-3 --epochs 12 --seeds 3 [-o OUT]

MODEL: a trainer run dir, a checkpoint or a Hugging Face directory (the CPU recipe's: `corpusprep run
pipelines/cpu-recipe.toml`, then RUN/train). Every evaluation is an output directory under OUT (default
/tmp/yardsticks): a rerun does nothing, a stopped one resumes.

Tasks (`--tasks`, default upos,ner,squad,cola,mrpc,rte,sts-b; `glue` is cola,mrpc,rte,sts-b; sst-2 only when
named: its 67,349 rows alone cost more than the rest). **Caps** make the default run fit about 90 minutes on
an idle 2-core machine with 3 seeds (`estimate` measures it; CAPS below, `--max-train`, `--max-dev`, `all`
for none): a capped file is a sample of the file's examples (sentences, rows or questions; kept in their
order), drawn from a generator seeded by the task's name, so every run of the bench fine-tunes on the same
examples; the table says which were capped. A capped task is not the published task: compare it with
itself (pre-trained against random init), not with published figures.

**SQuAD, reduced.** The full v1.1 training file (30 MB) is not at hand (the public store keeps no file over
4 MiB); DATA/squad holds v1.1's first 11 training articles (3,807 questions) and the whole v1.1 dev set (48
articles, 10,570 questions). The bench builds a split disjoint by article, in a scratch directory
(OUT/data/squad; deterministic: the files' article order): train = the 11 training articles + dev's first 24
articles (9,503 questions), dev = dev's articles 25-36 (2,427 questions; the epoch is chosen on it), test =
dev's articles 37-48 (2,447 questions; scored once). It is **a reduced SQuAD, not comparable to published
figures** (BERT-base's 88.5 F1 is on the whole dev set after training on 87,599 questions), and it runs at
the model's 64 positions (the CPU recipe's), where a context takes ~6 windows (doc stride 14, by
squad_features' default at that length): no `--benchmark`, so no published row is shown beside it.

Data: public copies, fetched with the search tool's `fetch` into DATA (`--data`, default $CORPUSPREP_EVAL_DATA
or ../data beside the repository; never committed; a missing file skips its task with a line saying so):

    ud_en_ewt    ../shared/eval/ud_en_ewt/en_ewt-ud-{train,dev}.conllu.xz (UD English-EWT, in the repository's
                 shared data); test from DATA/ud_en_ewt/en_ewt-ud-test.conllu when it is there (2,077
                 sentences; without it UPOS scores dev), from github.com/UniversalDependencies/UD_English-EWT
                 @ 15d613d8447b3478787d4c278730a1e48a945efb, whose dev file is byte for byte ../shared's
    conll2003/   eng.train, eng.testa (dev), eng.testb (test): the original CoNLL-2003 English files (IOB1),
                 from github.com/ZhixiuYe/HSCRF-pytorch @ 86bb64890317b74517c5ad44b47c66635df327d8, data/;
                 14,041 / 3,250 / 3,453 sentences as published
    squad/       train-v1.1-first11articles.json, dev-v1.1.json (see DATA/squad/README.md for their sources)
    glue/MRPC/   train.tsv, dev.tsv as GLUE's download script writes them (3,668 / 408 rows), from
                 github.com/Nstats/my_bert @ 733d79335044b1b7eabb5b47a0eae0cd621dadc0, data/MRPC/
    glue/STS-B/  train.tsv, dev.tsv (5,749 / 1,500), from github.com/korjak/sts-dev
                 @ 016124a06bbd2e7e02f37ffd4b754df219ee50cb, data/STS-B/ (GLUE's release, unedited)
    glue/SST-2/  train.tsv (its train_full.tsv, 67,349 rows), dev.tsv (872), from
                 github.com/eyalbd2/Reproducing-AutoPrompt @ 53e9e221b58e5ed882a56c9d8be838b895351165,
                 glue_data/SST-2/
    glue/RTE/    train.tsv, dev.tsv (2,490 / 277), from github.com/Ji-Yishan/MIEC-FYP
                 @ 250635701007f7f2dc00b63ce2cbc3dfe104b4e0, RTE/, which holds GLUE's RTE in the Hugging Face
                 layout (sentence1, sentence2, label 0/1, idx): written back in GLUE's (index, sentence1,
                 sentence2, entailment/not_entailment; 0 is entailment), rows in the same order
    glue/CoLA/   ../shared/eval/glue_cola/{train,dev}.tsv.xz (two columns, sentence and label; one of GLUE's
                 two dev parts, 516 rows)

UNER English-EWT (IOB2; github.com/UniversalNER/UNER_English-EWT @ 8ed072de2fd24022cc62458997fe96a8fe191ea4)
is in DATA/uner_en_ewt for the reader tests: its training file is over the fetch size limit.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: the repository's packages

from corpusprep.engine.rng import stable_hash  # noqa: E402

SHARED = REPO.parent / "shared" / "eval"
# The fetched public copies (the docstring lists them), beside the repository like ../shared; the tests' too.
PUBLIC_DATA = Path(os.environ.get("CORPUSPREP_EVAL_DATA") or REPO.parent / "data")


@dataclass(frozen=True)
class Yardstick:
    title: str
    layout: str  # what an example is, for caps: "blocks" (blank-line sentences), "table", "squad"
    glue: str | None = None  # GLUE's directory name: run through `--glue`, scored by its official metric
    flags: tuple[str, ...] = ()


YARDSTICKS = {
    "upos": Yardstick("UD English-EWT UPOS", "blocks"),
    "ner": Yardstick("CoNLL-2003 NER", "blocks", flags=("--benchmark", "conll2003")),
    "squad": Yardstick("SQuAD v1.1, reduced (not comparable)", "squad", flags=("--task", "qa")),
    "cola": Yardstick("GLUE CoLA", "table", "CoLA"),
    "mrpc": Yardstick("GLUE MRPC", "table", "MRPC"),
    "rte": Yardstick("GLUE RTE", "table", "RTE"),
    "sts-b": Yardstick("GLUE STS-B", "table", "STS-B"),
    "sst-2": Yardstick("GLUE SST-2", "table", "SST-2"),
}
DEFAULT_TASKS = ("upos", "ner", "squad", "cola", "mrpc", "rte", "sts-b")
GLUE = ("cola", "mrpc", "rte", "sts-b")
# Training examples kept by default (sentences, rows, questions), so that the default tasks with 3 seeds fit
# ~90 minutes on an idle 2-core machine at the tiny preset's defaults (10 epochs, batch 32, 64 pieces); set
# from `estimate`'s timing (BENCHMARKS.md, "Yardsticks"). Dev: SQuAD's is scored after every epoch, at ~6
# windows a question.
CAPS = {"ner": 8000, "squad": 3000, "sst-2": 8000}
DEV_CAPS = {"squad": 600}
SAMPLE_SEED = 0  # the caps' samples: stable_hash(SAMPLE_SEED, task, split)
WARM = 5  # estimate: steps run before the timed ones
START = 15.0  # estimate: seconds a run spends starting (a worker's imports, the model loaded), measured


# ---------------------------------------------------------------- data


def read_text(path: Path) -> str:
    raw = path.read_bytes()
    return (lzma.decompress(raw) if path.suffix == ".xz" else raw).decode("utf-8")


def write_if_changed(path: Path, text: str) -> Path:
    """Unchanged content is not written again: a rerun's evaluation finds its inputs as they were."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def squad_split(data: Path, scratch: Path) -> dict[str, Path] | None:
    """The reduced SQuAD v1.1 (the module's docstring): train = v1.1 train's first 11 articles + dev's
    first 24, dev = dev's next 12, test = its last 12; disjoint by article, in the files' order."""
    train, dev = data / "squad" / "train-v1.1-first11articles.json", data / "squad" / "dev-v1.1.json"
    if not (train.is_file() and dev.is_file()):
        return None
    articles = json.loads(dev.read_text(encoding="utf-8"))["data"]
    parts = {"train": json.loads(train.read_text(encoding="utf-8"))["data"] + articles[:24],
             "dev": articles[24:36], "test": articles[36:]}
    return {name: write_if_changed(scratch / "squad" / f"{name}.json", json.dumps({"version": "1.1",
                                                                                   "data": a}))
            for name, a in parts.items()}


def glue_dir(data: Path) -> Path:
    """DATA/glue, with CoLA from ../shared when the directory has none (the decompressed copy)."""
    glue = data / "glue"
    cola = glue / "CoLA"
    if not (cola / "train.tsv").is_file() and (SHARED / "glue_cola" / "train.tsv.xz").is_file():
        for split in ("train", "dev"):
            write_if_changed(cola / f"{split}.tsv", read_text(SHARED / "glue_cola" / f"{split}.tsv.xz"))
    return glue


def task_files(name: str, data: Path, scratch: Path) -> dict[str, Path] | None:
    """The task's files by split, or None when they are not all here."""
    task = YARDSTICKS[name]
    if name == "squad":
        return squad_split(data, scratch / "data")
    if task.glue:
        folder = glue_dir(data) / task.glue
        files = {"train": folder / "train.tsv", "dev": folder / "dev.tsv"}
    elif name == "upos":
        ewt = SHARED / "ud_en_ewt"
        files = {"train": ewt / "en_ewt-ud-train.conllu.xz", "dev": ewt / "en_ewt-ud-dev.conllu.xz"}
        if (test := data / "ud_en_ewt" / "en_ewt-ud-test.conllu").is_file():  # optional: else dev is scored
            files["test"] = test
    else:
        conll = data / "conll2003"
        files = {"train": conll / "eng.train", "dev": conll / "eng.testa", "test": conll / "eng.testb"}
    return files if all(p.is_file() for p in files.values()) else None


# ---------------------------------------------------------------- caps: a seeded sample of the examples


def sample_indexes(total: int, n: int, name: str, split: str) -> list[int]:
    """`n` of `total` indexes, sorted, drawn from a generator seeded by (SAMPLE_SEED, task, split)."""
    import numpy as np

    rng = np.random.default_rng(stable_hash(SAMPLE_SEED, name, split) % 2**63)
    return sorted(int(i) for i in rng.choice(total, size=n, replace=False))


def sample(path: Path, n: int, layout: str, name: str, split: str, target: Path) -> tuple[Path, int, int]:
    """A copy of `path` in `target` holding `n` of its examples (all when it has no more); the copy, and the
    examples kept and in all."""
    text = read_text(path)
    out = target / path.name.removesuffix(".xz")
    if layout == "squad":
        document = json.loads(text)
        questions = [(a, p, q) for a, article in enumerate(document["data"])
                     for p, paragraph in enumerate(article["paragraphs"])
                     for q in range(len(paragraph["qas"]))]
        chosen = set(sample_indexes(len(questions), min(n, len(questions)), name, split))
        keep = {questions[i] for i in chosen}
        for a, article in enumerate(document["data"]):
            for p, paragraph in enumerate(article["paragraphs"]):
                paragraph["qas"] = [q for k, q in enumerate(paragraph["qas"]) if (a, p, k) in keep]
            article["paragraphs"] = [p for p in article["paragraphs"] if p["qas"]]
        document["data"] = [a for a in document["data"] if a["paragraphs"]]
        return write_if_changed(out, json.dumps(document)), len(chosen), len(questions)
    if layout == "table":
        lines = text.splitlines(keepends=True)
        header = [] if name == "cola" else lines[:1]  # CoLA has no header row
        rows = lines[len(header) :]
        chosen = sample_indexes(len(rows), min(n, len(rows)), name, split)
        return write_if_changed(out, "".join(header + [rows[i] for i in chosen])), len(chosen), len(rows)
    blocks = [b for b in text.split("\n\n") if b.strip() and not b.lstrip().startswith("-DOCSTART-")]
    chosen = sample_indexes(len(blocks), min(n, len(blocks)), name, split)
    return write_if_changed(out, "\n\n".join(blocks[i] for i in chosen) + "\n"), len(chosen), len(blocks)


def parse_caps(value: str | None, defaults: dict[str, int]) -> dict[str, int]:
    """`--max-train`: N (every task), TASK=N,... (those tasks; the others keep CAPS) or `all` (no caps)."""
    if value is None:
        return dict(defaults)
    if value == "all":
        return {}
    if "=" not in value:
        return dict.fromkeys(YARDSTICKS, int(value))
    caps = dict(defaults)
    for part in value.split(","):
        task, _, n = part.partition("=")
        if task not in YARDSTICKS:
            raise SystemExit(f"--max-train/--max-dev {task}: one of {', '.join(YARDSTICKS)}")
        caps[task] = int(n)
    return caps


def prepared(name: str, files: dict[str, Path], args, out: Path) -> tuple[dict[str, Path], str]:
    """The task's files after its caps (a seeded sample), and what was kept. A GLUE task's files always go
    to OUT/data/glue/TASK (a sample or a copy), so that every GLUE task of a run is in one directory laid
    out as GLUE's and the suite's table reads them all back."""
    task = YARDSTICKS[name]
    caps = {"train": args.train_caps.get(name), **dict.fromkeys(("dev", "test"), args.dev_caps.get(name))}
    target = out / "data" / ("glue" if task.glue else "capped") / (task.glue or name)
    kept, said = dict(files), []
    for split, path in files.items():
        if caps[split]:
            kept[split], n, total = sample(path, caps[split], task.layout, name, split, target)
            if n < total:
                said.append(f"{split} {n:,} of {total:,}")
        elif task.glue:
            kept[split] = write_if_changed(target / path.name.removesuffix(".xz"), read_text(path))
    return kept, (", ".join(said) or "whole")


def evaluate_command(model: str, flags: list[str], target: Path, args) -> list[str]:
    extra = ["--epochs", f"{args.epochs:g}"] if args.epochs else []
    extra += ["--on-error", "skip"] if args.quick else []  # a tiny dev may hold a label train lacks
    return [sys.executable, "-m", "trainer.evaluate", model, *flags, "--seeds", str(args.seeds), "--workers",
            str(args.workers), "-o", str(target), *extra]


def command(model: str, name: str, files: dict[str, Path], args, out: Path) -> list[str]:
    task = YARDSTICKS[name]
    if task.glue:  # GLUE's format and official metric: the task's directory through --glue
        return evaluate_command(model, ["--glue", str(out / "data" / "glue"), "--glue-tasks", task.glue],
                                out / "glue", args)
    flags = [*(f for split, p in files.items() for f in (f"--{split}", str(p))), *task.flags]
    return evaluate_command(model, flags, out / name, args)


def result_of(name: str, out: Path) -> Path:
    task = YARDSTICKS[name]
    return (out / "glue" / task.glue if task.glue else out / name) / "evaluation.json"


# ---------------------------------------------------------------- the table


def row(title: str, result: dict, seconds: float, used: str, split: str = "dev") -> str:
    s = result["splits"][split]
    epochs = {i: statistics.median(r["epoch"] for r in result["runs"] if r["init"] == i)
              for i in ("pretrained", "random")}

    def cell(key: str, sign: str = "") -> str:
        return f"{s[key]['median']:{sign}.4f} ± {s[key]['std'] or 0:.4f}"

    return (f"| {title} ({split}) | {used} | {result['metric']} | {cell('pretrained')} | {cell('random')} | "
            f"{cell('gain', '+')} | {s['baseline']:.4f} | {s['outcome']} | {epochs['pretrained']:g} / "
            f"{epochs['random']:g} | {seconds / 60:.1f} min |")


def chosen_tasks(value: str) -> list[str]:
    names = [n for part in value.split(",") for n in (GLUE if part == "glue" else (part,)) if n]
    unknown = [n for n in names if n not in YARDSTICKS]
    if unknown:
        raise SystemExit(f"--tasks {unknown[0]}: one of {', '.join(YARDSTICKS)}, glue")
    return list(dict.fromkeys(names))


def present(args, out: Path) -> dict[str, tuple[dict[str, Path], str]]:
    """Each chosen task whose files are here: its files after the caps, and what was kept."""
    found = {}
    for name in chosen_tasks(args.tasks):
        files = task_files(name, Path(args.data), out)
        if files is None:
            print(f"{name}: skipped, its files are not in {args.data} (see the docstring)")
            continue
        found[name] = prepared(name, files, args, out)
    return found


def yardsticks(args) -> None:
    out = Path(args.out)
    started, load = time.perf_counter(), os.getloadavg()[0]
    lines = ["| task | train / dev used | metric | pre-trained | random init | gain | baseline | verdict | "
             "epoch chosen (pre / rand) | wall |", "|---|---|---|---:|---:|---:|---:|---|---:|---:|"]
    tasks = present(args, out)
    for name, (files, used) in tasks.items():
        task = YARDSTICKS[name]
        run = command(args.model, name, files, args, out)
        print(f"{task.title}: {shlex.join(run)}", flush=True)
        began = time.perf_counter()
        if subprocess.run(run, cwd=REPO, stdout=subprocess.DEVNULL).returncode != 0:
            print(f"  failed: {shlex.join(run)}", file=sys.stderr)
            continue
        seconds = time.perf_counter() - began
        result = json.loads(result_of(name, out).read_text())
        lines += [row(task.title, result, seconds, used, split) for split in result["splits"]]
    print(f"\n{os.cpu_count()} CPUs, load {load:.1f} at the start; {args.seeds} seeds a model; medians ± "
          f"standard deviations over seeds; {(time.perf_counter() - started) / 60:.1f} min in all; caps: "
          f"{caps_said(args)}\n")
    print("\n".join(lines))
    glue = [YARDSTICKS[n].glue for n in tasks if YARDSTICKS[n].glue]
    if glue and not args.quick:  # every GLUE task is done: the suite only reads them back and prints Table 1
        flags = ["--glue", str(out / "data" / "glue"), "--glue-tasks", ",".join(glue)]
        print()
        suite = evaluate_command(args.model, flags, out / "glue", args)
        subprocess.run(suite, cwd=REPO, stderr=subprocess.DEVNULL)


def caps_said(args) -> str:
    train = ", ".join(f"{t} {n:,}" for t, n in args.train_caps.items() if t in chosen_tasks(args.tasks))
    dev = ", ".join(f"{t} {n:,}" for t, n in args.dev_caps.items() if t in chosen_tasks(args.tasks))
    return (f"training examples {train or 'none'}; dev/test examples {dev or 'none'} (samples seeded by the "
            "task's name, bench/yardsticks.py)")


# ---------------------------------------------------------------- estimate: each task's cost, from a timing


def estimate(args) -> None:
    """Time a few fine-tuning steps and a dev pass of each task, with the settings its evaluation will use
    (the model's size defaults, its positions), on one thread as each run goes; extrapolate to the whole
    evaluation: 2 x seeds runs, `--workers` at once."""
    import dataclasses
    import math

    import torch

    from trainer.evaluate import finetune, glue
    from trainer.evaluate.compare import prepare
    from trainer.evaluate.model import pretrained
    from trainer.evaluate.settings import EvalSettings
    from trainer.evaluate.tasks.base import Encoded

    torch.set_num_threads(1)
    out = Path(args.out)
    load = os.getloadavg()[0]
    lines = ["| task | train / dev used | train examples -> features | steps an epoch x epochs | s a step "
             "| dev features, s each | one run | all runs |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    total = 0.0
    runs = 2 * args.seeds
    for name, (files, used) in present(args, out).items():
        task = YARDSTICKS[name]
        if task.glue:
            glue_task = glue.BY_NAME[task.glue.lower()]
            settings = glue.settings_for(glue_task, out / "data" / "glue", EvalSettings())
        else:
            flags = dict(zip(task.flags[::2], task.flags[1::2], strict=True))
            settings = EvalSettings(**{k: str(p) for k, p in files.items()},
                                    task=flags.get("--task", "auto"))
        if args.epochs:
            settings = dataclasses.replace(settings, epochs=args.epochs)
        data, resolved, _, _ = prepare(args.model, settings)
        with pretrained(args.model, None) as model:
            tokenizer = finetune.load_tokenizer(model.hf_dir)
            kind = data.task
            began = time.perf_counter()
            train = kind.encode(tokenizer, data, data.train.examples, resolved, train=True)
            scored = {n: kind.encode(tokenizer, data, s.examples, resolved, train=False)
                      for n, s in data.scored.items()}
            encoding = time.perf_counter() - began
            per_epoch = math.ceil(len(train.features) / resolved.batch_size)
            net = finetune.build_model(model.hf_dir, data, "pretrained", 1)
            ends: list[float] = []  # the end of each step: the first few (warming up) are left out
            timer = finetune.require_transformers().TrainerCallback()
            timer.on_step_end = lambda *_, ends=ends, **__: ends.append(time.perf_counter())
            began = time.perf_counter()
            timed = dataclasses.replace(resolved, epochs=(WARM + args.steps) / per_epoch)
            finetune.fit(net, tokenizer, data, train, timed, 1, callbacks=[timer])
            step = (ends[-1] - ends[WARM - 1]) / (len(ends) - WARM)
            overhead = max(0.0, time.perf_counter() - began - len(ends) * step)  # the Trainer's set-up
            sample = Encoded(scored["dev"].features[:512])
            began = time.perf_counter()
            finetune.predict(net, kind.collator(finetune.require_transformers(), tokenizer), kind, sample,
                             resolved.batch_size * 2)
            predict = (time.perf_counter() - began) / max(1, len(sample.features))
        epochs = math.ceil(resolved.epochs)
        dev = len(scored["dev"].features)
        one = (START + encoding + overhead + resolved.epochs * per_epoch * step + epochs * dev * predict
               + sum(len(e.features) for n, e in scored.items() if n != "dev") * predict)
        wall = math.ceil(runs / args.workers) * one
        total += wall
        lines.append(f"| {task.title} | {used} | {len(data.train.examples):,} -> {len(train.features):,} | "
                     f"{per_epoch:,} x {resolved.epochs:g} | {step:.3f} | {dev:,}, {1000 * predict:.1f} ms | "
                     f"{one / 60:.1f} min | {wall / 60:.1f} min |")
        print(lines[-1], flush=True)
    print(f"\nEstimated from {args.steps} timed steps a task, one thread a run, {runs} runs a task "
          f"({args.seeds} seeds x 2 models), {args.workers} at once; load {load:.1f} at the start on "
          f"{os.cpu_count()} CPUs{' (a loaded machine: an idle one is faster)' if load > 1.5 else ''}; caps: "
          f"{caps_said(args)}\n")
    print("\n".join(lines))
    tasks = "" if args.tasks == ",".join(DEFAULT_TASKS) else f" --tasks {args.tasks}"
    print(f"\ntotal: {total / 60:.0f} min. The run:\n\n    python bench/yardsticks.py "
          f"{shlex.quote(args.model)} --seeds {args.seeds} -o {shlex.quote(args.out)}{tasks}")


# ---------------------------------------------------------------- converge


def converge(args) -> None:
    """Dev accuracy per epoch on UD EWT for each learning rate (medians over seeds), both models."""
    out = Path(args.out)
    files, _ = prepared("upos", task_files("upos", Path(args.data), out), args, out)
    curves: dict[tuple[str, float], list[list[float]]] = {}
    for lr in (float(x) for x in args.lrs.split(",")):
        flags = ["--train", str(files["train"]), "--dev", str(files["dev"]), "--lr", f"{lr:g}"]
        print(f"lr {lr:g}: evaluating", flush=True)
        began = time.perf_counter()
        target = out / f"converge-lr{lr:g}"
        if subprocess.run(evaluate_command(args.model, flags, target, args), cwd=REPO,
                          stdout=subprocess.DEVNULL).returncode != 0:
            continue
        for run in json.loads((target / "evaluation.json").read_text())["runs"]:
            curves.setdefault((run["init"], lr), []).append([v for _, v in run["curve"]])
        print(f"  {(time.perf_counter() - began) / 60:.1f} min")
    epochs = max(len(c) for runs in curves.values() for c in runs)
    head = "| epoch | " + " | ".join(f"{init} {lr:g}" for init, lr in curves) + " |"
    lines = [head, "|---:|" + "---:|" * len(curves)]
    for e in range(epochs):
        cells = [f"{statistics.median(c[e] for c in runs):.4f}" if all(len(c) > e for c in runs) else ""
                 for runs in curves.values()]
        lines.append(f"| {e + 1} | " + " | ".join(cells) + " |")
    print(f"\nUD English-EWT UPOS dev accuracy per epoch (median over {args.seeds} seeds), one "
          f"{args.epochs:g}-epoch schedule each (linear decay to 0 at its end)\n")
    print("\n".join(lines))
    for (init, lr), runs in curves.items():
        medians = [statistics.median(c[e] for c in runs) for e in range(min(len(c) for c in runs))]
        best = max(medians)
        first = next(e for e, m in enumerate(medians) if m >= best - 0.002) + 1
        print(f"{init} lr {lr:g}: best {best:.4f}; within 0.002 of it from epoch {first}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", nargs="?", choices=("run", "estimate", "converge"), default="run")
    p.add_argument("model", help="a run dir, a checkpoint or a Hugging Face directory")
    p.add_argument("--data", default=str(PUBLIC_DATA), help="the fetched public copies (see the docstring; "
                   "default: %(default)s)")
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="upos, ner, squad, cola, mrpc, rte, "
                   "sts-b, sst-2; glue: cola,mrpc,rte,sts-b (default: %(default)s)")
    p.add_argument("--max-train", metavar="N|TASK=N,...|all", help="training examples kept (a seeded sample; "
                   f"default {', '.join(f'{t}={n}' for t, n in CAPS.items())}; all: no caps)")
    p.add_argument("--max-dev", metavar="N|TASK=N,...|all", help="dev (and test) examples kept (default "
                   f"{', '.join(f'{t}={n}' for t, n in DEV_CAPS.items())})")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--epochs", type=float, help="default: trainer.evaluate's, by model size")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--quick", type=int, default=0, metavar="N", help="a dry run: N training examples (and "
                   "N/4 of dev) of each task")
    p.add_argument("--steps", type=int, default=30, help="estimate: the steps timed a task")
    p.add_argument("--lrs", default="3e-4,1e-3,3e-3", help="converge: the learning rates")
    p.add_argument("-o", "--out", default="/tmp/yardsticks")
    args = p.parse_args()
    args.train_caps = parse_caps(args.max_train, CAPS)
    args.dev_caps = parse_caps(args.max_dev, DEV_CAPS)
    if args.quick:
        args.train_caps = dict.fromkeys(YARDSTICKS, args.quick)
        args.dev_caps = dict.fromkeys(YARDSTICKS, max(50, args.quick // 4))
    if args.mode == "converge":
        args.epochs = args.epochs or 12
        args.tasks = "upos"
        args.train_caps, args.dev_caps = (args.train_caps, args.dev_caps) if args.quick else ({}, {})
        converge(args)
    elif args.mode == "estimate":
        estimate(args)
    else:
        yardsticks(args)


if __name__ == "__main__":
    main()
