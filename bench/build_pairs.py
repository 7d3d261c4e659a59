"""build-pairs vs the tokenizer floor (HF `tokenizers` encode_batch over the same sentences, both cores).

    .venv/bin/python bench/build_pairs.py [--mb N] [--scale 4]

Prints: the floor, build-pairs with all cores, 1 and 2 workers (wall time, instances/s, instances/s/core,
peak RSS of the whole process tree), the ratios, and with --scale K the peak RSS on K copies of the corpus.
Inputs: ../shared/corpus/enwiki_AA.txt.xz and bert-base-uncased-vocab.txt (read-only, never copied).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def make_vocab(directory: Path, shared: Path = SHARED) -> Path:
    """Google's vocab.txt as a corpusprep vocab directory (`corpusprep vocab --from-vocab`)."""
    vocab_txt = shared / "bert-base-uncased-vocab.txt"
    command = [sys.executable, "-m", "corpusprep", "vocab", "--from-vocab", str(vocab_txt), "-o"]
    subprocess.run([*command, str(directory), "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    return directory


def prefix_corpus(mb: float, path: Path, shared: Path = SHARED) -> Path:
    """The first `mb` MB of the corpus, cut after a closing </doc>."""
    with lzma.open(shared / "enwiki_AA.txt.xz", "rt", encoding="utf-8") as f:
        text = f.read(int(mb * 1e6))
    path.write_text(text[: text.rfind("</doc>") + len("</doc>\n")])
    return path


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def measured(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak process-tree RSS (polled every 50 ms) of a command."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    if process.returncode:
        sys.exit(f"failed: {shlex.join(command)}\n{process.stderr.read().decode()}")
    return seconds, peak


FLOOR = """
import os, sys, time
os.environ["TOKENIZERS_PARALLELISM"] = "true"
from corpusprep.read import ReadOptions, iter_documents
from corpusprep.split import get_splitter
from tokenizers import Tokenizer
split = get_splitter("default")
sentences = [s for d in iter_documents(sys.argv[2:], ReadOptions()) for s in split(d.text)]
tokenizer = Tokenizer.from_file(sys.argv[1])
start = time.perf_counter()
for i in range(0, len(sentences), 100_000):
    tokenizer.encode_batch(sentences[i:i + 100_000], add_special_tokens=False)
print(time.perf_counter() - start, len(sentences))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, help="only the first N MB of the corpus")
    parser.add_argument("--scale", type=int, default=0, help="also run on K copies of the corpus (memory)")
    args = parser.parse_args()
    print("reproduce:", shlex.join([sys.executable, *sys.argv]))
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="bench-pairs-") as tmp:
        tmp = Path(tmp)
        vocab = make_vocab(tmp / "vocab")
        corpus = prefix_corpus(args.mb, tmp / "enwiki.txt") if args.mb else SHARED / "enwiki_AA.txt.xz"
        floor_out = subprocess.run(
            [sys.executable, "-c", FLOOR, str(vocab / "tokenizer.json"), str(corpus)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        floor, sentences = float(floor_out[0]), int(floor_out[1])
        print(
            f"corpus: {corpus.name}, {sentences:,} sentences, {cores} cores (shared machine: noisy timings)"
        )
        print(f"floor: tokenizers encode_batch over the sentences, {cores} threads: {floor:.1f} s")

        def build(name: str, inputs: list[Path], workers: int) -> tuple[float, int, dict]:
            out = tmp / f"pairs-{name}"
            command = [
                sys.executable,
                "-m",
                "corpusprep",
                "build-pairs",
                *map(str, inputs),
                "--vocab",
                str(vocab),
                "-o",
                str(out),
                "--workers",
                str(workers),
                "--no-progress",
            ]
            seconds, peak = measured(command)
            stats = json.loads((out / "stats.json").read_text())
            shutil.rmtree(out)
            used = workers or cores
            print(
                f"build-pairs {name:>9}: {seconds:6.1f} s  {stats['pairs']:>9,} pairs  "
                f"{stats['pairs'] / seconds:8,.0f} inst/s  "
                f"{stats['pairs'] / seconds / used:8,.0f} inst/s/core  "
                f"peak RSS {peak / 2**30:.2f} GiB  NotNext {stats['not_next'] / stats['pairs']:.4f}"
            )
            return seconds, peak, stats

        all_cores, peak, _ = build("all cores", [corpus], 0)
        one, _, _ = build("1 worker", [corpus], 1)
        two, _, _ = build("2 workers", [corpus], 2) if cores != 2 else (all_cores, peak, None)
        print(f"build-pairs / floor: {all_cores / floor:.2f}x  (target <= 1.5x)")
        print(f"2 workers vs 1: {one / two:.2f}x faster  (target >= 1.7x)")
        if args.scale > 1:
            copies = tmp / "copies"
            copies.mkdir()
            for k in range(args.scale):  # same documents under other names: other ids, other partitions
                shutil.copyfile(corpus, copies / f"copy{k}{''.join(corpus.suffixes)}")
            _, big_peak, _ = build(f"{args.scale}x", [copies], 0)
            print(f"peak RSS {args.scale}x corpus / 1x: {big_peak / peak:.2f}  (target <= 1.2)")


if __name__ == "__main__":
    main()
