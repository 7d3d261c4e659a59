"""Same bytes before and after a refactor: run every stage on a fixed sample with a given checkout and record
the sha256 of what it wrote (vocab, sentences, pairs for nsp/sop/none, shards for each masking strategy, three
short CPU training runs, two HF exports), so a change meant to keep behaviour is compared file by file.

    python bench/same_bytes.py record REPO LABEL [--work DIR]  # -> DIR/LABEL.json (sha256 of every output)
    python bench/same_bytes.py compare DIR/A.json DIR/B.json    # exit 1 and one line per file that differs

REPO is a checkout with its own .venv (./scripts/env.sh test). Everything is written under one fixed path
(DIR/run, wiped first) so that the absolute paths recorded in manifests are the same in every run; the
corpus is made once (DIR/corpus) and reused, so input mtimes -- part of every artifact's identity -- are too.
Volatile values (timings) are dropped from JSON before hashing: keys in VOLATILE, in artifact.json and a
checkpoint's config.json the entries of files that hold timings, in a sentences record its output's mtime.
metrics.jsonl and PNGs are not compared. Run `record` twice on the unchanged code first: both must match
(this also shows the training runs are deterministic on the machine). ~80 s on an idle 2-core machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

VOLATILE = {"seconds", "finished", "started", "elapsed", "wall_seconds", "tokens_per_second", "time"}
VOLATILE_FILES = {"vocab_report.json", "metrics.jsonl", "curves.png", "report.md", "report.json"}
# compared without their timings, but a record listing their raw sha256 (a checkpoint's config.json) cannot be
TIMED_FILES = {"trainer.json"}
SKIP_SUFFIXES = (".png", ".lock", "metrics.jsonl")
OBJECTIVE_STRATEGIES = {"nsp": ("token", "whole-word", "span"), "sop": ("token",), "none": ("token", "span")}
TRAIN = {  # run name -> (shards dir, extra trainer flags)
    "train-nsp": ("shards-nsp-token", []),
    "train-none": ("shards-none-span", []),
    "train-sop-dyn": ("shards-sop-token", ["--dynamic-masking"]),
}
SHARED_WIKI = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "enwiki_AA.txt.xz"


def sh(repo: Path, *args: str) -> None:
    env = os.environ | {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONHASHSEED": "0",
                         "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([str(repo / ".venv/bin/python"), *args], cwd=repo, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(args)}\n{done.stderr[-3000:]}")


def make_corpus(work: Path, repo: Path) -> Path:
    corpus = work / "corpus"
    if corpus.is_dir():
        return corpus  # made once: same bytes and mtimes for every later record
    tmp = work / ".corpus-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    sh(repo, "-m", "corpusprep", "demo-corpus", "-o", str(tmp / "demo.jsonl"), "--max-mb", "1.5")
    if SHARED_WIKI.is_file():  # real text too, in WikiExtractor format: the first ~3 MB
        with lzma.open(SHARED_WIKI, "rt", encoding="utf-8") as f:
            text = f.read(3_000_000)
        (tmp / "wiki.txt").write_text(text[: text.rfind("</doc>") + len("</doc>")] + "\n", encoding="utf-8")
    tmp.rename(corpus)
    return corpus


def run_stages(repo: Path, corpus: Path, run: Path) -> None:
    cp = ["-m", "corpusprep"]
    sh(repo, *cp, "vocab", str(corpus), "-o", str(run / "vocab"), "--vocab-size", "4000", "--no-progress")
    for name in ("sentences.txt", "sentences.parquet"):  # the one single-file output (record beside it)
        sh(repo, *cp, "sentences", str(corpus), "-o", str(run / name), "--no-progress")
    for objective, strategies in OBJECTIVE_STRATEGIES.items():
        pairs = run / f"pairs-{objective}"
        sh(repo, *cp, "build-pairs", str(corpus), "--vocab", str(run / "vocab"), "-o", str(pairs),
           "--objective", objective, "--max-seq-length", "64", "--dupe-factor", "2",
           "--docs-per-partition", "256", "--workers", "2", "--no-progress")
        for strategy in strategies:
            sh(repo, *cp, "shard", str(pairs), "--vocab", str(run / "vocab"),
               "-o", str(run / f"shards-{objective}-{strategy}"), "--mask-strategy", strategy,
               "--num-shards", "3", "--dupe-masks", "2", "--workers", "2", "--no-progress")
    for name, (shards, extra) in TRAIN.items():
        sh(repo, "-m", "trainer.run", "--shards", str(run / shards), "--run-dir", str(run / name),
           "--preset", "tiny", "--steps", "30", "--batch-size", "16", "--seed", "7", "--device", "cpu",
           "--checkpoint-every", "15", "--eval-every", "15", "--log-every", "10", *extra)
    sh(repo, "-m", "trainer.export", str(run / "train-nsp"), str(run / "hf-nsp"))
    sh(repo, "-m", "trainer.export", str(run / "train-none"), str(run / "hf-none"))


def _drop_volatile(value, also=frozenset()):
    if isinstance(value, dict):
        return {k: _drop_volatile(v) for k, v in value.items()
                if k not in VOLATILE and k not in VOLATILE_FILES and k not in TIMED_FILES and k not in also}
    if isinstance(value, list):
        return [_drop_volatile(v) for v in value]
    return value


def digest(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".json":
        try:
            # a single-file output's record (`.NAME.done.json`) holds the output's own size and mtime
            also = {"output"} if path.name.endswith(".done.json") else frozenset()
            data = json.dumps(_drop_volatile(json.loads(data), also), sort_keys=True).encode()
        except ValueError:
            pass
    return hashlib.sha256(data).hexdigest()


def record(repo: Path, label: str, work: Path) -> Path:
    corpus = make_corpus(work, repo)
    run = work / "run"
    shutil.rmtree(run, ignore_errors=True)
    started = time.perf_counter()
    run_stages(repo, corpus, run)
    files = {p.relative_to(run).as_posix(): digest(p) for p in sorted(run.rglob("*"))
             if p.is_file() and not p.name.endswith(SKIP_SUFFIXES) and p.name not in VOLATILE_FILES
             and "/.work/" not in f"/{p.relative_to(run).as_posix()}"}
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    out = work / f"{label}.json"
    out.write_text(json.dumps({"repo": str(repo), "commit": commit.stdout.strip(),
                               "seconds": round(time.perf_counter() - started, 1), "files": files},
                              indent=1, sort_keys=True) + "\n")
    print(f"{out}: {len(files)} files in {time.perf_counter() - started:.0f} s")
    return out


def compare(a: Path, b: Path) -> int:
    fa, fb = (json.loads(p.read_text())["files"] for p in (a, b))
    bad = [f"{n}: only in {a.name}" for n in sorted(set(fa) - set(fb))]
    bad += [f"{n}: only in {b.name}" for n in sorted(set(fb) - set(fa))]
    bad += [f"{n}: differs" for n in sorted(set(fa) & set(fb)) if fa[n] != fb[n]]
    for line in bad:
        print(line)
    print(f"{len(set(fa) & set(fb))} files compared, {len(bad)} differences")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("repo", type=Path)
    rec.add_argument("label")
    rec.add_argument("--work", type=Path, default=Path("/tmp/same-bytes"))
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("a", type=Path)
    cmp_.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.repo.resolve(), args.label, args.work.resolve())
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
