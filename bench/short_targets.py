"""Short targets by segment vs by document, on a corpus of a few very long documents (books).

    PYTHONPATH=. .venv/bin/python bench/short_targets.py [--mb 4] [--books 4] [--seeds 8] [--shared DIR]

The enwiki prefix is cut into --books documents of consecutive articles (a corpus of a few novels), and
`corpusprep build-pairs` (NSP, length 128, short_seq_prob 0.1, one dupe pass, nothing held out) runs with
--short-seq-by segment and document for each seed. Printed per seed: the share of rows with a short target
(`short_target_pairs` in stats.json) and the padding of the rows (1 - tokens / (rows x 128), [CLS] and
[SEP]s counted as tokens). By document one
coin per book decides all of its rows; by segment every row draws its own.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
from build_pairs import SHARED, make_vocab, prefix_corpus

from corpusprep.read import ReadOptions, iter_documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4)
    parser.add_argument("--books", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--shared", type=Path, default=SHARED)
    args = parser.parse_args()
    print("reproduce:", shlex.join([sys.executable, *sys.argv]))
    with tempfile.TemporaryDirectory(prefix="bench-short-") as tmp:
        tmp = Path(tmp)
        vocab = make_vocab(tmp / "vocab", args.shared)
        texts = [
            d.text
            for d in iter_documents([prefix_corpus(args.mb, tmp / "wiki.txt", args.shared)], ReadOptions())
        ]
        books = tmp / "books.jsonl"
        with open(books, "w") as f:
            for i, part in enumerate(np.array_split(np.arange(len(texts)), args.books)):
                f.write(json.dumps({"id": f"book{i}", "text": "\n".join(texts[j] for j in part)}) + "\n")
        print(f"{len(texts)} articles in {args.books} books of ~{args.mb / args.books:.1f} MB")
        print("| seed | short rows, by segment | by document | padding, by segment | by document |")
        print("|---:|---:|---:|---:|---:|")
        shares: dict[str, list[float]] = {"segment": [], "document": []}
        for seed in range(args.seeds):
            cells = {}
            for by in ("segment", "document"):
                out = tmp / f"{by}-{seed}"
                options = ["--vocab", str(vocab), "-o", str(out), "--dupe-factor", "1", "--seed", str(seed),
                           "--validation-fraction", "0", "--short-seq-by", by, "--no-progress"]
                command = [sys.executable, "-m", "corpusprep", "build-pairs", str(books), *options]
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                train = json.loads((out / "stats.json").read_text())["splits"]["train"]
                rows = pq.read_table(out / "train", columns=["tokens_a", "tokens_b"])
                tokens = sum(pc.sum(pc.list_value_length(rows[c])).as_py() for c in ("tokens_a", "tokens_b"))
                share = train["short_target_pairs"] / train["pairs"]
                shares[by].append(share)
                cells[by] = (share, 1 - (tokens + 3 * rows.num_rows) / (128 * rows.num_rows))
            print(f"| {seed} | {cells['segment'][0]:.3f} | {cells['document'][0]:.3f} | "
                  f"{cells['segment'][1]:.3f} | {cells['document'][1]:.3f} |")
        for by, values in shares.items():
            print(
                f"{by}: short rows mean {np.mean(values):.3f}, sd over seeds {np.std(values, ddof=1):.3f}, "
                f"range {min(values):.3f}-{max(values):.3f}"
            )


if __name__ == "__main__":
    main()
