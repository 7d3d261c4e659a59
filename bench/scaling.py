"""Data-prep scaling: build-pairs + shard throughput with 1 and 2 workers, local process pool vs Ray.

    .venv/bin/python bench/scaling.py [--mb 16] [--dupe 2]

Every configuration prepares the same prefix of ../shared/corpus/enwiki_AA.txt.xz (read-only; cut into a
temp dir, never into the repo) with Google's BERT vocab, from empty output dirs; Ray runs on a local
2-CPU cluster started before the clock starts (its start-up time is printed apart). Prints wall time and
throughput per stage, the speed-up over local with 1 worker, and checks that every configuration wrote
the same shards (sha256 from the manifests).
"""

from __future__ import annotations

import argparse
import lzma
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpusprep.pair.build import PairOptions, build_pairs  # noqa: E402
from corpusprep.read import ReadOptions  # noqa: E402
from corpusprep.shard.build import build_shards  # noqa: E402
from corpusprep.shard.options import ShardOptions  # noqa: E402
from corpusprep.tokenize.vocab import VocabOptions, build_vocab  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"
CONFIGS = [("local", 1), ("local", 2), ("ray", 1), ("ray", 2)]


def prefix_corpus(mb: float, path: Path) -> Path:
    """The first `mb` MB of the corpus, cut after a closing </doc>."""
    with lzma.open(SHARED / "enwiki_AA.txt.xz", "rt", encoding="utf-8") as f:
        text = f.read(int(mb * 1e6))
    path.write_text(text[: text.rfind("</doc>") + len("</doc>\n")])
    return path


def run_one(corpus: Path, vocab: Path, out: Path, engine: str, workers: int, dupe: int) -> dict:
    # Small partitions so a few MB already make a dozen tasks (enwiki articles average ~16 kB).
    pairs_options = PairOptions(dupe_factor=dupe, docs_per_partition=64, docs_per_chunk=64)
    kwargs = {"workers": workers, "engine": engine, "progress": False}
    t0 = time.perf_counter()
    stats = build_pairs([corpus], vocab, out / "pairs", pairs_options, ReadOptions(format="wiki"), **kwargs)
    t1 = time.perf_counter()
    manifest = build_shards(out / "pairs", vocab, out / "shards", ShardOptions(num_shards=8), **kwargs)
    t2 = time.perf_counter()
    digests = sorted(s["sha256"] for split in manifest["splits"].values() for s in split["shards"])
    return {
        "pairs_s": t1 - t0,
        "pairs": stats["pairs"],
        "shard_s": t2 - t1,
        "examples": manifest["totals"]["examples"],
        "digests": digests,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=16.0, help="MB of enwiki text to prepare")
    parser.add_argument("--dupe", type=int, default=2, help="pairs dupe_factor")
    args = parser.parse_args()
    import ray

    with tempfile.TemporaryDirectory(prefix="corpusprep-scaling-") as tmp:
        root = Path(tmp)
        corpus = prefix_corpus(args.mb, root / "enwiki.txt")
        vocab = root / "vocab"
        build_vocab(None, vocab, VocabOptions(from_vocab=str(SHARED / "bert-base-uncased-vocab.txt")))
        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray_start = time.perf_counter() - t0
        results = {}
        for engine, workers in CONFIGS:
            results[engine, workers] = run_one(
                corpus, vocab, root / f"{engine}-{workers}", engine, workers, args.dupe
            )
        ray.shutdown()

    base = results["local", 1]
    print(
        f"\n{args.mb:g} MB of enwiki, dupe_factor {args.dupe}: {base['pairs']:,} pairs, {base['examples']:,} "
        f"examples; Ray local cluster start-up {ray_start:.1f} s (not counted)\n"
    )
    print(
        f"{'engine':<8}{'workers':>8}{'pairs s':>10}{'pairs/s':>10}{'shard s':>10}{'ex/s':>10}{'total s':>10}"
        f"{'speed-up':>10}"
    )
    for (engine, workers), r in results.items():
        total = r["pairs_s"] + r["shard_s"]
        print(
            f"{engine:<8}{workers:>8}{r['pairs_s']:>10.1f}{r['pairs'] / r['pairs_s']:>10,.0f}"
            f"{r['shard_s']:>10.1f}{r['examples'] / r['shard_s']:>10,.0f}{total:>10.1f}"
            f"{(base['pairs_s'] + base['shard_s']) / total:>9.2f}x"
        )
    same = all(r["digests"] == base["digests"] for r in results.values())
    print(f"\nidentical shards in every configuration: {same}")
    print(f"reproduce: .venv/bin/python bench/scaling.py {shlex.join(sys.argv[1:])}".rstrip())


if __name__ == "__main__":
    main()
