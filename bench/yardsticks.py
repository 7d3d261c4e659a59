"""The paper's yardsticks for a model of ours: UD English-EWT UPOS, CoNLL-2003 NER and GLUE tasks, each
through `python -m trainer.evaluate` (the model beside the same architecture randomly initialised, the same
seeds, the epoch chosen on dev, the median over seeds), with the wall time of each on this machine, as a
table for BENCHMARKS.md. And `converge`: dev accuracy per epoch on UD EWT at several learning rates, which is
how the tiny preset's defaults in trainer/evaluate/settings.py were chosen.

    python bench/yardsticks.py MODEL [--data /work/data] [--seeds 3] [--tasks upos,ner,glue] [-o OUT]
    python bench/yardsticks.py MODEL --quick 400 --seeds 1 -o OUT        # a dry run on cut-down files
    python bench/yardsticks.py converge MODEL --lrs 3e-4,1e-3,3e-3 --epochs 12 --seeds 3 [-o OUT]

MODEL: a trainer run dir, a checkpoint or a Hugging Face directory (the CPU recipe's: `corpusprep run
pipelines/cpu-recipe.toml`, then RUN/train). Every evaluation is an output directory under OUT (default
/tmp/yardsticks): a rerun does nothing, a stopped one resumes.

Data: public copies, fetched with the search tool's `fetch` into DATA (default /work/data; never committed;
missing files skip their task with a line saying so):

    ud_en_ewt    ../shared/eval/ud_en_ewt/en_ewt-ud-{train,dev}.conllu.xz (UD English-EWT, in the repository's
                 shared data)
    conll2003/   eng.train, eng.testa (dev), eng.testb (test): the original CoNLL-2003 English files (IOB1),
                 from github.com/ZhixiuYe/HSCRF-pytorch @ 86bb64890317b74517c5ad44b47c66635df327d8, data/;
                 14,041 / 3,250 / 3,453 sentences as published
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
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "eval"
GLUE_TASKS = ("CoLA", "SST-2", "MRPC", "STS-B", "RTE")


def tasks(data: Path) -> dict[str, dict]:
    """Each yardstick: its files and the evaluate flags that read them."""
    ewt, conll = SHARED / "ud_en_ewt", data / "conll2003"
    return {
        "upos": {"title": "UD English-EWT UPOS", "train": ewt / "en_ewt-ud-train.conllu.xz",
                 "dev": ewt / "en_ewt-ud-dev.conllu.xz", "flags": []},
        "ner": {"title": "CoNLL-2003 NER", "train": conll / "eng.train", "dev": conll / "eng.testa",
                "test": conll / "eng.testb", "flags": ["--benchmark", "conll2003"]},
    }  # fmt: skip


def glue_dir(data: Path, out: Path) -> Path:
    """DATA/glue, with CoLA from ../shared when the directory has none (a link to the decompressed copy)."""
    glue = data / "glue"
    cola = glue / "CoLA"
    if not (cola / "train.tsv").is_file() and (SHARED / "glue_cola" / "train.tsv.xz").is_file():
        cola.mkdir(parents=True, exist_ok=True)
        for split in ("train", "dev"):
            packed = (SHARED / "glue_cola" / f"{split}.tsv.xz").read_bytes()
            (cola / f"{split}.tsv").write_bytes(lzma.decompress(packed))
    return glue


# ---------------------------------------------------------------- --quick: cut-down copies


def head_blocks(text: str, n: int, table: bool) -> str:
    """The first `n` rows of a table (after its header) or sentences of a CoNLL file (blank-line blocks)."""
    if table:
        lines = text.splitlines(keepends=True)
        return "".join(lines[: n + 1])
    blocks = [b for b in text.split("\n\n") if b.strip()]
    return "\n\n".join(blocks[:n]) + "\n"


def read_text(path: Path) -> str:
    raw = path.read_bytes()
    return (lzma.decompress(raw) if path.suffix == ".xz" else raw).decode("utf-8")


def quick_size(n: int, split: str) -> int:
    return n if split == "train" else max(50, n // 4)


def cut(path: Path, n: int, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    name = path.name.removesuffix(".xz")
    table = name.endswith(".tsv")
    headerless = table and path.parent.name == "CoLA"  # CoLA has no header row: keep n rows
    text = head_blocks(read_text(path), n - int(headerless), table)
    out = target / name
    if not out.is_file() or out.read_text(encoding="utf-8") != text:  # unchanged: a rerun finds it done
        out.write_text(text, encoding="utf-8")
    return out


# ---------------------------------------------------------------- runs


def evaluate(model: str, flags: list[str], out: Path, seeds: int,
             extra: list[str]) -> tuple[dict | None, float]:  # fmt: skip
    """`python -m trainer.evaluate` into `out`; its evaluation.json and the wall time."""
    command = [sys.executable, "-m", "trainer.evaluate", model, *flags, "--seeds", str(seeds), "-o", str(out),
               *extra]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        print(f"  failed ({done.returncode}): {' '.join(command)}", file=sys.stderr)
        return None, seconds
    return json.loads((out / "evaluation.json").read_text()), seconds


def row(title: str, result: dict, seconds: float, split: str = "dev") -> str:
    s = result["splits"][split]
    epochs = {i: statistics.median(r["epoch"] for r in result["runs"] if r["init"] == i)
              for i in ("pretrained", "random")}  # fmt: skip

    def cell(key: str, sign: str = "") -> str:
        return f"{s[key]['median']:{sign}.4f} ± {s[key]['std'] or 0:.4f}"

    return (f"| {title} ({split}) | {result['metric']} | {cell('pretrained')} | {cell('random')} | "
            f"{cell('gain', '+')} | {s['baseline']:.4f} | {s['outcome']} | {epochs['pretrained']:g} / "
            f"{epochs['random']:g} | {seconds / 60:.1f} min |")


def yardsticks(args) -> None:
    out = Path(args.out)
    data = Path(args.data)
    wanted = args.tasks.split(",")
    machine = f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start"
    lines = ["| task | metric | pre-trained | random init | gain | baseline | verdict | epoch chosen (pre / "
             "rand) | wall |", "|---|---|---:|---:|---:|---:|---|---:|---:|"]  # fmt: skip
    extra = ["--workers", str(args.workers)] + (["--epochs", str(args.epochs)] if args.epochs else [])
    extra += ["--on-error", "skip"] if args.quick else []  # a cut-down dev may hold a label train lacks
    for name, task in tasks(data).items():
        if name not in wanted:
            continue
        files = {split: task[split] for split in ("train", "dev", "test") if split in task}
        if not all(p.is_file() for p in files.values()):
            print(f"{name}: skipped, {', '.join(str(p) for p in files.values() if not p.is_file())} missing")
            continue
        if args.quick:
            files = {split: cut(p, quick_size(args.quick, split), out / "quick" / name)
                     for split, p in files.items()}  # fmt: skip
        flags = [*(f for split, p in files.items() for f in (f"--{split}", str(p))), *task["flags"]]
        print(f"{task['title']}: evaluating", flush=True)
        result, seconds = evaluate(args.model, flags, out / name, args.seeds, extra)
        if result is not None:
            lines += [row(task["title"], result, seconds, split) for split in result["splits"]]
    if "glue" in wanted:
        glue = glue_dir(data, out)
        for name in args.glue_tasks.split(","):
            folder = glue / name
            if not (folder / "train.tsv").is_file():
                print(f"GLUE {name}: skipped, no {folder / 'train.tsv'}")
                continue
            if args.quick:
                folder = cut(folder / "train.tsv", args.quick, out / "quick" / "glue" / name).parent
                cut(glue / name / "dev.tsv", quick_size(args.quick, "dev"), folder)
            print(f"GLUE {name}: evaluating", flush=True)
            flags = ["--glue", str(folder.parent), "--glue-tasks", name]
            started = time.perf_counter()
            command = [sys.executable, "-m", "trainer.evaluate", args.model, *flags, "--seeds",
                       str(args.seeds), "-o", str(out / "glue"), *extra]  # fmt: skip
            if subprocess.run(command, cwd=REPO, stdout=subprocess.DEVNULL).returncode != 0:
                print(f"  failed: {' '.join(command)}", file=sys.stderr)
                continue
            result = json.loads((out / "glue" / name / "evaluation.json").read_text())
            seconds = time.perf_counter() - started
            lines += [row(f"GLUE {name}", result, seconds, split) for split in result["splits"]]
    print(f"\n{machine}; seeds a model: {args.seeds}; medians ± standard deviations over seeds\n")
    print("\n".join(lines))
    if "glue" in wanted:
        suite = [sys.executable, "-m", "trainer.evaluate", args.model, "--glue", str(glue_dir(data, out)),
                 "--glue-tasks", args.glue_tasks, "--seeds", str(args.seeds), "-o", str(out / "glue"), *extra]
        if not args.quick:  # every task is done: the suite only reads them back and prints Table 1
            print()
            subprocess.run(suite, cwd=REPO, stderr=subprocess.DEVNULL)


# ---------------------------------------------------------------- converge


def converge(args) -> None:
    """Dev accuracy per epoch on UD EWT for each learning rate (medians over seeds), both models."""
    ewt = SHARED / "ud_en_ewt"
    files = {"train": ewt / "en_ewt-ud-train.conllu.xz", "dev": ewt / "en_ewt-ud-dev.conllu.xz"}
    out = Path(args.out)
    if args.quick:
        files = {s: cut(p, quick_size(args.quick, s), out / "quick" / "converge") for s, p in files.items()}
    curves: dict[tuple[str, float], list[list[float]]] = {}
    for lr in (float(x) for x in args.lrs.split(",")):
        flags = ["--train", str(files["train"]), "--dev", str(files["dev"]), "--lr", f"{lr:g}", "--epochs",
                 str(args.epochs), "--workers", str(args.workers)]  # fmt: skip
        print(f"lr {lr:g}: evaluating", flush=True)
        result, seconds = evaluate(args.model, flags, out / f"converge-lr{lr:g}", args.seeds, [])
        if result is None:
            continue
        for run in result["runs"]:
            curves.setdefault((run["init"], lr), []).append([v for _, v in run["curve"]])
        print(f"  {seconds / 60:.1f} min")
    epochs = max(len(c) for runs in curves.values() for c in runs)
    head = "| epoch | " + " | ".join(f"{init} {lr:g}" for init, lr in curves) + " |"
    lines = [head, "|---:|" + "---:|" * len(curves)]
    for e in range(epochs):
        cells = [f"{statistics.median(c[e] for c in runs):.4f}" if all(len(c) > e for c in runs) else ""
                 for runs in curves.values()]  # fmt: skip
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
    p.add_argument("mode", nargs="?", choices=("run", "converge"), default="run")
    p.add_argument("model", help="a run dir, a checkpoint or a Hugging Face directory")
    p.add_argument("--data", default="/work/data", help="the fetched public copies (see the docstring)")
    p.add_argument("--tasks", default="upos,ner,glue")
    p.add_argument("--glue-tasks", default=",".join(GLUE_TASKS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--epochs", type=float, help="default: trainer.evaluate's, by model size")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--quick", type=int, default=0, metavar="N", help="a dry run: the first N training "
                   "examples (and N/4 of dev)")
    p.add_argument("--lrs", default="3e-4,1e-3,3e-3", help="converge: the learning rates")
    p.add_argument("-o", "--out", default="/tmp/yardsticks")
    args = p.parse_args()
    if args.mode == "converge":
        args.epochs = args.epochs or 12
        converge(args)
    else:
        yardsticks(args)


if __name__ == "__main__":
    main()
