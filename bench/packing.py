"""Padding share of build-pairs rows by objective: nsp and sop pairs, none unpacked and packed.

    .venv/bin/python bench/packing.py [--mb 10] [--lengths 128 512]

For each max_seq_length, one dupe pass over the first MB of ../shared/corpus/enwiki_AA.txt.xz (Google's
uncased vocab): rows, the mean tokens a row holds with its special tokens ([CLS] A [SEP] B [SEP], or
[CLS] piece [SEP] per piece), and the padding share = 1 - that / max_seq_length, measured from the Parquet
files. Padding is what a padded batch computes for nothing; none --pack is RoBERTa FULL-SENTENCES.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from build_pairs import SHARED, make_vocab, prefix_corpus  # noqa: E402

from corpusprep.engine.stage import RunContext  # noqa: E402
from corpusprep.pair.build import PairOptions, build_pairs  # noqa: E402
from corpusprep.read import ReadOptions  # noqa: E402

RUNS = {  # label: (objective, pack)
    "nsp": ("nsp", None),
    "sop": ("sop", None),
    "none --no-pack": ("none", False),
    "none --pack": ("none", True),
}


def row_lengths(out: Path) -> tuple[np.ndarray, int, int]:
    """Each row's length with its special tokens, the text tokens in all rows, and the pieces (or pairs)."""
    lengths, text, pieces = [], 0, 0
    for path in sorted((out / "train").glob("*.parquet")):
        table = pq.read_table(path)
        if "piece_lengths" in table.column_names:
            n = pc.list_value_length(table["piece_lengths"]).to_numpy()
            tokens = pc.list_value_length(table["tokens"]).to_numpy()
            lengths.append(tokens + 2 * n)
            pieces += int(n.sum())
        else:
            tokens = (pc.list_value_length(table["tokens_a"]).to_numpy()
                      + pc.list_value_length(table["tokens_b"]).to_numpy())
            lengths.append(tokens + 3)
            pieces += len(tokens)
        text += int(tokens.sum())
    return np.concatenate(lengths), text, pieces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="the first N MB of the corpus (default 10)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512], help="max_seq_length values")
    args = parser.parse_args()
    if not (SHARED / "enwiki_AA.txt.xz").is_file():
        sys.exit(f"bench/packing.py: {SHARED / 'enwiki_AA.txt.xz'} not found")
    print("reproduce:", shlex.join([sys.executable, *sys.argv]))
    with tempfile.TemporaryDirectory(prefix="bench-packing-") as tmp:
        tmp = Path(tmp)
        vocab = make_vocab(tmp / "vocab")
        corpus = prefix_corpus(args.mb, tmp / "enwiki.txt")
        print(f"corpus: first {args.mb:g} MB of enwiki_AA.txt.xz, train split, one dupe pass, seed 12345")
        print(f"{'length':>6} {'objective':<15} {'rows':>9} {'pairs/pieces':>12} {'per row':>8} "
              f"{'text tokens':>11} {'mean row':>8} {'padding':>8} {'seconds':>7}")
        for length in args.lengths:
            for name, (objective, pack) in RUNS.items():
                out = tmp / f"{objective}-{pack}-{length}"
                options = PairOptions(max_seq_length=length, dupe_factor=1, objective=objective, pack=pack)
                started = time.perf_counter()
                build_pairs([corpus], vocab, out, options, ReadOptions(), context=RunContext(progress=False))
                seconds = time.perf_counter() - started
                rows, text, pieces = row_lengths(out)
                print(f"{length:>6} {name:<15} {len(rows):>9,} {pieces:>12,} {pieces / len(rows):>8.2f} "
                      f"{text:>11,} {rows.mean():>8.1f} {1 - rows.mean() / length:>8.1%} {seconds:>7.1f}")


if __name__ == "__main__":
    main()
