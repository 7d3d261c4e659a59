"""build-pairs + shard vs Google's create_pretraining_data.py, in instances per CPU-second; and vs the floor.

    .venv/bin/python bench/pairs_vs_google.py [--mb 5 10] [--floor-mb 20] [--corpus FILE]
        [--google-dir DIR --google-python PYTHON]

CPU seconds are user + sys of the whole process tree (children included, from getrusage(RUSAGE_CHILDREN)
around each command), so the figures hold on a shared machine where wall time does not; each command runs
--repeat times and the least time is reported (contention only ever adds). Ours runs as a user
runs it: `corpusprep build-pairs` then `corpusprep shard`, CLI defaults (default workers, dupe factor 5,
length 128), from bytecode compiled beforehand as an installed package's is (`pip install` compiles it):
the bench compiles corpusprep's and Google's modules first, which matters where PYTHONDONTWRITEBYTECODE is
set (every command would otherwise compile its ~60 modules again: ~0.05 CPU-s). Google's script
(google-research/bert master, TF1 API) needs TensorFlow, which is not a project dependency: point
--google-dir at a folder holding its create_pretraining_data.py and tokenization.py (under TensorFlow 2,
with `import tensorflow as tf` changed to `import tensorflow.compat.v1 as tf` in both) and --google-python
at an interpreter with tensorflow. It runs as given, and as a copy that reads --do_whole_word_mask once
instead of once per token (see google_scripts: the 2018 release's cost, about half of master's). It is
given the same text, one sentence a line as our splitter cuts it (that splitting is not counted for
Google, and is counted for us). Without them the
reference figure of 2,500 instances per CPU-second (measured on this machine, see BENCHMARKS.md) is used.
The floor is `tokenizers` encode_batch_fast over the same sentences on all cores (wall time, as build-pairs').
Inputs: ../shared/corpus/enwiki_AA.txt.xz and bert-base-uncased-vocab.txt (read-only, never copied).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from build_pairs import SHARED, make_vocab, prefix_corpus

GOOGLE_REFERENCE = 2_500  # instances per CPU-second, Google's script on this machine (BENCHMARKS.md)

FLOOR = """
import os, sys, time
os.environ["TOKENIZERS_PARALLELISM"] = "true"
from corpusprep.read import ReadOptions, iter_documents
from corpusprep.split import get_splitter
from tokenizers import Tokenizer
split = get_splitter("default")
sentences = [s for d in iter_documents(sys.argv[2:], ReadOptions()) for s in split(d.text)]
tokenizer = Tokenizer.from_file(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
for i in range(0, len(sentences), 100_000):
    tokenizer.encode_batch_fast(sentences[i:i + 100_000], add_special_tokens=False)
print(time.perf_counter() - start, time.process_time() - cpu, len(sentences))
"""

SENTENCES = """
import sys
from corpusprep.read import ReadOptions, iter_documents
from corpusprep.split import get_splitter
split = get_splitter("default")
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for d in iter_documents([sys.argv[1]], ReadOptions()):
        out.write("".join(s.replace("\\n", " ") + "\\n" for s in split(d.text)) + "\\n")
"""


def timed(command: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + sys of the process tree) of a command, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode:
        sys.exit(f"failed: {shlex.join(command)}\n{process.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, process.stderr


def corpusprep(*args: str) -> list[str]:
    return [sys.executable, "-m", "corpusprep", *args, "--no-progress"]


def ours(corpus: Path, vocab: Path, tmp: Path) -> tuple[int, float, float, float]:
    """Instances, CPU seconds of build-pairs and of shard, wall seconds of both."""
    pairs, shards = tmp / "pairs", tmp / "shards"
    wall_p, cpu_p, _ = timed(corpusprep("build-pairs", str(corpus), "--vocab", str(vocab), "-o", str(pairs)))
    wall_s, cpu_s, _ = timed(corpusprep("shard", str(pairs), "--vocab", str(vocab), "-o", str(shards)))
    instances = json.loads((pairs / "stats.json").read_text())["pairs"]
    subprocess.run(["rm", "-rf", str(pairs), str(shards)], check=True)
    return instances, cpu_p, cpu_s, wall_p + wall_s


def google(corpus: Path, tmp: Path, directory: Path, python: str) -> tuple[int, float, float]:
    """Instances, CPU and wall seconds of Google's script on the same text, one sentence a line."""
    lines = tmp / "google-input.txt"
    subprocess.run([sys.executable, "-c", SENTENCES, str(corpus), str(lines)], check=True)
    command = [
        python,
        str(directory / "create_pretraining_data.py"),
        f"--input_file={lines}",
        f"--output_file={tmp / 'google.tfrecord'}",
        f"--vocab_file={SHARED / 'bert-base-uncased-vocab.txt'}",
        "--do_lower_case=True",
        "--max_seq_length=128",
        "--max_predictions_per_seq=20",
        "--masked_lm_prob=0.15",
        "--random_seed=12345",
        "--dupe_factor=5",
    ]
    env = {
        **os.environ,
        "PYTHONPATH": str(directory),
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "1",
    }
    wall, cpu, log = timed(command, env)
    written = re.search(r"Wrote (\d+) total instances", log)
    if not written:
        sys.exit(f"Google's script wrote no instance count:\n{log[-2000:]}")
    (tmp / "google.tfrecord").unlink()
    return int(written.group(1)), cpu, wall


def google_scripts(directory: Path, tmp: Path) -> dict[str, Path]:
    """Google's script as given, and (for a revision with whole-word masking, i.e. master since 2019) a copy
    that reads --do_whole_word_mask once per run: master reads the flag once per token, through TF's flag
    wrapper (~2 us each), which doubles its time. The copy costs what the 2018 release (before that flag)
    did: the fastest form of Google's script, so the least flattering ratio for ours."""
    scripts = {"as given": directory}
    source = (directory / "create_pretraining_data.py").read_text()
    if "FLAGS.do_whole_word_mask" in source:  # we never pass the flag: it is False throughout
        copy = tmp / "google-flag-read-once"
        copy.mkdir()
        shutil.copy(directory / "tokenization.py", copy)
        (copy / "create_pretraining_data.py").write_text(source.replace("FLAGS.do_whole_word_mask", "False"))
        scripts["flag read once"] = copy
    return scripts


def compile_bytecode(python: str, directory: Path) -> None:
    """Write the .pyc files `python` reads for the modules under `directory`, as `pip install` does."""
    subprocess.run([python, "-m", "compileall", "-q", str(directory)], stdout=subprocess.DEVNULL, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs="+", default=[5, 10], help="prefix sizes in MB")
    parser.add_argument("--floor-mb", type=float, default=20, help="prefix for the floor ratio (0: skip)")
    parser.add_argument(
        "--corpus", type=Path, help="another corpus file, used whole (default: enwiki prefixes)"
    )
    parser.add_argument("--google-dir", type=Path, help="folder with Google's create_pretraining_data.py")
    parser.add_argument("--google-python", default=sys.executable, help="interpreter with tensorflow")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the least CPU time is reported")
    args = parser.parse_args()
    print("reproduce:", shlex.join([sys.executable, *sys.argv]))
    cores = len(os.sched_getaffinity(0))
    print(
        f"{cores} cores, load {os.getloadavg()[0]:.1f} (shared machine: CPU-second rates are the robust ones)"
    )
    if not args.google_dir:
        print(f"Google: reference figure {GOOGLE_REFERENCE:,} instances per CPU-second (script not run)")
    package = importlib.util.find_spec("corpusprep").submodule_search_locations[0]
    compile_bytecode(sys.executable, Path(package))
    with tempfile.TemporaryDirectory(prefix="bench-google-") as tmp:
        tmp = Path(tmp)
        scripts = google_scripts(args.google_dir, tmp) if args.google_dir else {}
        for directory in scripts.values():
            compile_bytecode(args.google_python, directory)
        vocab = make_vocab(tmp / "vocab")
        inputs = (
            [args.corpus]
            if args.corpus
            else [prefix_corpus(mb, tmp / f"enwiki-{mb:g}mb.txt") for mb in args.mb]
        )
        for corpus in inputs:
            size = corpus.stat().st_size / 1e6
            n, cpu_p, cpu_s, wall = min(
                (ours(corpus, vocab, tmp) for _ in range(args.repeat)), key=lambda r: r[1] + r[2]
            )
            rate = n / (cpu_p + cpu_s)
            print(
                f"{corpus.name} ({size:.1f} MB): ours {n:,} instances, build-pairs {cpu_p:.2f} + shard "
                f"{cpu_s:.2f} CPU s ({wall:.1f} s wall): {rate:,.0f} instances per CPU-second"
            )
            if not scripts:
                print(f"  ours / Google per CPU-second: {rate / GOOGLE_REFERENCE:.1f}x  (target >= 10x)")
            for label, directory in scripts.items():
                runs = [google(corpus, tmp, directory, args.google_python) for _ in range(args.repeat)]
                g, g_cpu, g_wall = min(runs, key=lambda r: r[1])
                print(
                    f"  Google ({label}): {g:,} instances, {g_cpu:.2f} CPU s ({g_wall:.1f} s wall): "
                    f"{g / g_cpu:,.0f} per CPU-second; ours / Google {rate * g_cpu / g:.1f}x  (target >= 10x)"
                )
        if args.floor_mb and not args.corpus:
            corpus = prefix_corpus(args.floor_mb, tmp / "floor.txt")
            floors, builds = [], []
            for _ in range(args.repeat):
                out = subprocess.run(
                    [sys.executable, "-c", FLOOR, str(vocab / "tokenizer.json"), str(corpus)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split()
                floors.append((float(out[0]), float(out[1]), int(out[2])))
                pairs = tmp / "pairs-floor"
                builds.append(
                    timed(corpusprep("build-pairs", str(corpus), "--vocab", str(vocab), "-o", str(pairs)))
                )
                subprocess.run(["rm", "-rf", str(pairs)], check=True)
            floor, floor_cpu, sentences = min(floors)
            wall, cpu = min(b[0] for b in builds), min(b[1] for b in builds)
            print(
                f"floor ({args.floor_mb:g} MB, {sentences:,} sentences): encode_batch_fast {floor:.2f} s "
                f"({floor_cpu:.2f} CPU s) on {cores} threads; build-pairs {wall:.2f} s ({cpu:.2f} CPU s): "
                f"{wall / floor:.2f}x wall, {cpu / floor_cpu:.2f}x CPU  (target <= 1.5x)"
            )


if __name__ == "__main__":
    main()
