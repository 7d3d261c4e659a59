"""build-pairs on many tiny documents vs an ordinary corpus of the same size: work files, work bytes, wall
time and peak RSS (whole process tree), and their ratios.

    .venv/bin/python bench/tiny_documents.py [--mb 64] [--workers 0] [--repo PATH] [--timeout 3600]

ordinary: the first --mb MB of ../shared/corpus/enwiki_AA.txt.xz (WikiExtractor format, ~3 KB a document);
tiny: --mb MB of two-word documents ("word word", a blank line between documents: ~13 bytes each, 5 million
in 64 MB), seeded random words from Google's vocab, so the file is the same on every machine. Both with
Google's vocab and build-pairs' default options. Work files and bytes: the peak, polled every 0.2 s, of what
`PAIRS_DIR/.work` holds (document chunks, token files, task markers). --repo: the checkout whose code runs
(its own corpusprep package; default this one), to compare a change with the code before it; a run past
--timeout seconds is stopped and reported as such, with what it had written by then.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_pairs import SHARED, make_vocab, prefix_corpus, tree_rss  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def tiny_corpus(mb: float, path: Path) -> int:
    """Two-word documents up to `mb` MB; returns how many."""
    words = [w for w in (SHARED / "bert-base-uncased-vocab.txt").read_text().split("\n")
             if w.isalpha() and w.isascii() and 3 <= len(w) <= 6]
    rng = np.random.default_rng(0)
    target, size, count = int(mb * 1e6), 0, 0
    with path.open("w") as f:
        while size < target:
            pick = np.asarray(words, dtype=object)[rng.integers(0, len(words), (10_000, 2))]
            block = "".join(f"{a} {b}\n\n" for a, b in pick)
            f.write(block)
            size += len(block)
            count += len(pick)
    return count


def work_size(work: Path) -> tuple[int, int]:
    """(files, bytes) under `work` now."""
    files = size = 0
    for root, _, names in os.walk(work):
        for name in names:
            try:
                size += os.stat(os.path.join(root, name)).st_size
            except OSError:
                continue
            files += 1
    return files, size


def run(repo: Path, corpus: Path, fmt: str, vocab: Path, out: Path, workers: int, timeout: float) -> dict:
    """One build-pairs: seconds, peak RSS, peak work files and bytes, and whether it finished in time."""
    command = [str(repo / ".venv/bin/python"), "-m", "corpusprep", "build-pairs", str(corpus), "--vocab",
               str(vocab), "-o", str(out), "--input-format", fmt, "--workers", str(workers), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)  # its own process group: a stop reaches its workers
    peak = files = size = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        now = work_size(out / ".work")
        files, size = max(files, now[0]), max(size, now[1])
        if time.perf_counter() - start > timeout:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            break
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    if process.returncode not in (0, -9):
        sys.exit(f"failed: {' '.join(command)}\n{process.stderr.read().decode()[-3000:]}")
    finished = process.returncode == 0
    pairs = json.loads((out / "stats.json").read_text())["pairs"] if finished else 0
    return {"seconds": seconds, "rss": peak, "files": files, "bytes": size, "pairs": pairs,
            "finished": finished}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=64.0)
    parser.add_argument("--workers", type=int, default=0, help="0: one per core (the default)")
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout whose code runs")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before a run is stopped")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        vocab = make_vocab(tmp / "vocab")
        ordinary = prefix_corpus(args.mb, tmp / "wiki.txt")
        documents = tiny_corpus(args.mb, tmp / "tiny.txt")
        results = {}
        for name, corpus, fmt in (("ordinary", ordinary, "wiki"), ("tiny", tmp / "tiny.txt", "text")):
            results[name] = run(args.repo.resolve(), corpus, fmt, vocab, tmp / f"pairs-{name}", args.workers,
                                args.timeout)
            r = results[name]
            mb = corpus.stat().st_size / 1e6
            stopped = "" if r["finished"] else " (STOPPED at --timeout)"
            count = f", {documents:,} documents" if name == "tiny" else ""
            print(f"{name:>8}: {mb:.1f} MB{count}: {r['seconds']:.1f} s{stopped}, {r['pairs']:,} pairs, "
                  f"peak RSS {r['rss'] / 2**20:,.0f} MiB, work: {r['files']:,} files, "
                  f"{r['bytes'] / 2**20:,.1f} MiB ({r['files'] / mb:.1f} files and "
                  f"{r['bytes'] / 1e6 / mb:.2f} MB per MB of input)")
        o, t = results["ordinary"], results["tiny"]
        keys = ("seconds", "rss", "files", "bytes", "pairs")
        print("tiny / ordinary: " + ", ".join(f"{key} {t[key] / max(o[key], 1):.2f}x" for key in keys))
        print(f"code: {args.repo}; command: {' '.join(sys.argv)}")


if __name__ == "__main__":
    main()
