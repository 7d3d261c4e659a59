"""build-pairs on ONE long document: peak RSS (whole process tree) per byte of text.

    .venv/bin/python bench/long_document.py [--mb 40] [--workers 1] [--one-line]

The document is the first --mb MB of ../shared/corpus/enwiki_AA.txt.xz without its <doc> markup: one
paragraph a line and no blank line, so plain-text input reads it as a single document (--one-line: as a single
line, paragraphs joined by spaces). Prints wall time, peak RSS and RSS per byte of text.
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_pairs import SHARED, make_vocab, measured  # noqa: E402


def one_document(mb: float, path: Path, one_line: bool) -> int:
    lines = []
    size = 0
    with lzma.open(SHARED / "enwiki_AA.txt.xz", "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or re.match(r"</?doc[ >]", line):
                continue
            lines.append(line)
            size += len(line.encode()) + 1
            if size >= mb * 1e6:
                break
    # NSP draws NotNext segments from another document: a short second one makes the corpus usable.
    second = "A second, short document. It gives the long one a partner for NotNext segments.\n"
    path.write_text((" " if one_line else "\n").join(lines) + "\n\n" + second, encoding="utf-8")
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=40.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--one-line", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        vocab = make_vocab(tmp / "vocab")
        corpus = tmp / "book.txt"
        size = one_document(args.mb, corpus, args.one_line)
        out = tmp / "pairs"
        command = [sys.executable, "-m", "corpusprep", "build-pairs", str(corpus), "--vocab", str(vocab),
                   "-o", str(out), "--workers", str(args.workers), "--no-progress", "--dupe-factor", "1",
                   "--input-format", "text", "--validation-fraction", "0"]
        seconds, peak = measured(command)
        stats = json.loads((out / "stats.json").read_text())
        print(f"{size / 1e6:.1f} MB in {stats['documents']} document(s), {stats['pairs']:,} pairs: "
              f"{seconds:.1f} s, peak RSS {peak / 2**30:.2f} GiB = {peak / size:.1f} bytes per byte of text")


if __name__ == "__main__":
    main()
