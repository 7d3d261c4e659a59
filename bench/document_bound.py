"""Peak memory of `corpusprep sentences` on documents without a blank line, with the document size bound
(`--max-document-mb`, default 16) and without it (a bound larger than the file: the reader before the bound,
which held a document whole).

    .venv/bin/python bench/document_bound.py --mb 100 [--shape line|lines|both] [--keep DIR]

`line`: a .gz holding one line of MB megabytes; `lines`: MB megabytes of short sentences a line, no blank
line (the one-sentence-per-line file docs/manual/sentences.md sends to `--splitter lines`). Seeded random
words, so the file is the same on every machine.
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WORDS = np.array([
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
    "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "they", "you",
    "were", "her", "she", "there", "one", "all", "we", "their", "been", "has",
])
UNBOUNDED_MB = 1e6  # larger than any file here: the document is held whole, as before the bound


def write_corpus(path: Path, megabytes: float, shape: str) -> None:
    rng = np.random.default_rng(0)
    target, done = int(megabytes * 1e6), 0
    with gzip.open(path, "wb", compresslevel=1) as f:
        while done < target:
            words = WORDS[rng.integers(0, len(WORDS), 200_000)]
            ends = rng.integers(0, 12, len(words)) == 0  # a sentence every ~12 words
            text = " ".join(np.where(ends, np.char.add(words, "."), words).tolist())
            data = (text.replace(". ", ".\n") + "\n" if shape == "lines" else text + " ").encode()
            f.write(data)
            done += len(data)
        f.write(b"\n")


def run(corpus: Path, out: Path, bound: float) -> tuple[float, float, int]:
    """(peak RSS in MB, seconds, exit code) of one `corpusprep sentences` run."""
    argv = [sys.executable, "-m", "corpusprep", "sentences", str(corpus), "-o", str(out), "--overwrite",
            "--no-progress", "--max-document-mb", str(bound)]
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    return usage.ru_maxrss / 1024, time.perf_counter() - start, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the document (MB of text)")
    parser.add_argument("--shape", choices=("line", "lines", "both"), default="both")
    parser.add_argument("--keep", type=Path, help="write the corpora here (reused when present)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"{'shape':<6} {'MB':>6} {'bound':>9} {'peak RSS MB':>12} {'seconds':>8} {'exit':>5}")
        for shape in ("line", "lines") if args.shape == "both" else (args.shape,):
            corpus = folder / f"{shape}-{args.mb:g}mb.txt.gz"
            if not corpus.exists():
                write_corpus(corpus, args.mb, shape)
            peaks = {}
            for bound in (16.0, UNBOUNDED_MB):
                peak, seconds, code = run(corpus, Path(scratch) / "out.txt", bound)
                peaks[bound] = peak
                label = "none" if bound == UNBOUNDED_MB else f"{bound:g} MB"
                print(f"{shape:<6} {args.mb:>6g} {label:>9} {peak:>12,.0f} {seconds:>8.1f} {code:>5}")
            print(f"{shape}: unbounded / bounded peak RSS {peaks[UNBOUNDED_MB] / peaks[16.0]:.2f}x")


if __name__ == "__main__":
    main()
