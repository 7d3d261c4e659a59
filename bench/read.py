"""Read-stage throughput on the enwiki file: ours vs the decompression ceiling and a naive text-mode loop.

    .venv/bin/python bench/read.py [../shared/corpus/enwiki_AA.txt.xz]
"""

from __future__ import annotations

import logging
import lzma
import sys
import time
import tracemalloc
from pathlib import Path

from corpusprep.read import ReadStats, iter_documents

PATH = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/corpus/enwiki_AA.txt.xz")


def decompress_only() -> int:
    with lzma.open(PATH) as f:
        while f.read(1 << 20):
            pass
    return 0


def naive_lines() -> int:
    """What a first attempt looks like: text-mode lines, no counting, no positions, no repairs."""
    docs = 0
    with lzma.open(PATH, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            docs += line.startswith("</doc>")
    return docs


def ours() -> int:
    stats = ReadStats()
    return sum(1 for _ in iter_documents([PATH], stats=stats))


def main() -> None:
    logging.getLogger("corpusprep.read").setLevel(logging.ERROR)  # the 4 stub pages are not news here
    with lzma.open(PATH) as f:
        mb = f.seek(0, 2) / 1e6
    runs = {"xz decompress only": decompress_only, "naive text lines": naive_lines, "corpusprep.read": ours}
    times = {}
    for name, fn in runs.items():
        start = time.perf_counter()
        docs = fn()
        times[name] = time.perf_counter() - start
        print(f"{name:20s} {times[name]:6.2f} s  {mb / times[name]:6.1f} MB/s  "
              f"{docs / times[name] if docs else float('nan'):8.0f} docs/s")
    print(f"ours / decompress-only time: {times['corpusprep.read'] / times['xz decompress only']:.2f}x")
    peaks = {}
    for name in ("xz decompress only", "corpusprep.read"):
        tracemalloc.start()
        runs[name]()
        peaks[name] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    print(f"peak traced memory: decompress only {peaks['xz decompress only']:.1f} MiB (the xz dictionary), "
          f"corpusprep.read {peaks['corpusprep.read']:.1f} MiB")


if __name__ == "__main__":
    main()
