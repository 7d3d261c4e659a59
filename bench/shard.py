"""Benchmark `corpusprep shard`: examples/s per core and peak RSS at 1x and 4x input; CPU by stage; masking
vs peers.

    .venv/bin/python bench/shard.py                    # synthetic pairs: 1x = 100k, 4x = 400k, one worker
    .venv/bin/python bench/shard.py --pairs PAIRS_DIR  # real build-pairs output (see below)
    .venv/bin/python bench/shard.py --profile          # also: CPU time per stage (cProfile, process time)
    .venv/bin/python bench/shard.py --row-groups       # also: random row reads/s and bytes per row group

Each run is `corpusprep shard --workers 1` in a child process, timed by its own rusage (CPU time is what
counts on a shared machine; wall time is printed too). "marginal" is (4x - 1x examples) / (4x - 1x CPU): the
rate with the fixed start-up cost (imports, vocab) taken out.
Synthetic input: the first 8 MB of ../shared/corpus/enwiki_AA.txt.xz encoded with Google's bert-base-uncased
vocab and cut into pairs with BERT's length profile (tests/shard/realistic.py: target 128 tokens, 10% shorter,
half NotNext). Real input: `corpusprep build-pairs ../shared/corpus/enwiki_AA.txt.xz --vocab VOCAB -o DIR
--dupe-factor 4` (VOCAB from `corpusprep vocab --from-vocab ../shared/corpus/bert-base-uncased-vocab.txt`);
1x is its first dupe pass (the `*-d0.parquet` files), 4x all four.
The 1x input is also sharded with --mask-strategy whole-word and span (rows "1x wwm", "1x span").
Masking step alone, on the same examples: each of our strategies (token, whole-word, span) and two peers,
Hugging Face's DataCollatorForLanguageModeling (per-token Bernoulli on padded tensors) and a per-example
Python loop as in create_pretraining_data.py.
"""

from __future__ import annotations

import argparse
import lzma
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from corpusprep.engine.rng import rng_for  # noqa: E402
from corpusprep.mask import (  # noqa: E402
    Masking,
    MaskVocab,
    examples_from_pairs,
    mask_examples,
    strategies,  # noqa: E402
)
from corpusprep.tokenize import VocabInfo  # noqa: E402
from tests.shard.realistic import make_pairs, write_pairs_dir  # noqa: E402

SHARED = ROOT.parent / "shared" / "corpus"
PAIRS_PER_FILE = 50_000


def prepare(cache: Path, text_mb: float) -> tuple[Path, np.ndarray]:
    """A vocab dir for Google's vocab, and the first `text_mb` MB of the corpus encoded (cached)."""
    from tokenizers import BertWordPieceTokenizer

    vocab_dir, stream_path = cache / "vocab", cache / f"stream-{text_mb:g}mb.npy"
    if not (vocab_dir / "tokenizer.json").exists():
        vocab_dir.mkdir(parents=True, exist_ok=True)
        (vocab_dir / "vocab.txt").write_bytes((SHARED / "bert-base-uncased-vocab.txt").read_bytes())
        BertWordPieceTokenizer(str(vocab_dir / "vocab.txt"), lowercase=True).save(
            str(vocab_dir / "tokenizer.json")
        )
    if not stream_path.exists():
        lines, size = [], 0
        with lzma.open(SHARED / "enwiki_AA.txt.xz", "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip() and not line.startswith(("<doc", "</doc")):
                    lines.append(line.strip())
                    size += len(line)
                    if size > text_mb * 1e6:
                        break
        tokenizer = VocabInfo.load(vocab_dir).tokenizer()
        ids = [np.asarray(e.ids, np.uint16) for e in tokenizer.encode_batch(lines, add_special_tokens=False)]
        np.save(stream_path, np.concatenate(ids))
    return vocab_dir, np.load(stream_path)


def run_cli(pairs: Path, vocab: Path, out: Path, workers: int, strategy: str = "token") -> dict:
    """Run `corpusprep shard` in a child; its own wall time, CPU time and peak RSS (wait4 rusage)."""
    shutil.rmtree(out, ignore_errors=True)  # a finished run of the same input would be a no-op
    command = [
        sys.executable,
        "-m",
        "corpusprep",
        "shard",
        str(pairs),
        "--vocab",
        str(vocab),
        "-o",
        str(out),
        "--workers",
        str(workers),
        "--no-progress",
        "--overwrite",
        "--mask-strategy",
        strategy,
    ]
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status:
        raise SystemExit(f"failed: {' '.join(command)}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "command": " ".join(command),
    }


def reference_loop(examples, vocab: VocabInfo, seed: int) -> int:
    """Google's algorithm one example at a time in Python (shuffle candidates, take, 80/10/10 per token)."""
    rng, predictions = random.Random(seed), 0
    words = vocab.random_token_ids.tolist()
    for i in range(len(examples)):
        tokens = examples.ids[i, : examples.lengths[i]].tolist()
        candidates = [j for j, t in enumerate(tokens) if t not in (vocab.cls_id, vocab.sep_id)]
        rng.shuffle(candidates)
        budget = min(20, max(1, round(len(tokens) * 0.15)))
        for j in sorted(candidates[:budget]):
            u = rng.random()
            tokens[j] = (
                vocab.mask_id if u < 0.8 else tokens[j] if u < 0.9 else words[rng.randint(0, len(words) - 1)]
            )
            predictions += 1
    return predictions


def masking_peers(stream: np.ndarray, vocab_dir: Path, n: int = 100_000) -> None:
    vocab = VocabInfo.load(vocab_dir)
    mv = MaskVocab.from_vocab(vocab)
    table = make_pairs(stream, n, seed=0)
    batches = [examples_from_pairs(table.slice(i, 8192), vocab=mv, max_seq_length=128, source="bench")
               for i in range(0, n, 8192)]
    timings = {}
    for strategy in strategies.names():  # the first (token) is what the peers are compared with
        start = time.process_time()
        for b, ex in enumerate(batches):
            mask_examples(ex, mv, rng_for(0, "mask", b), masking=Masking(strategy=strategy))
        timings[f"corpusprep --mask-strategy {strategy} (numpy, exact count)"] = time.process_time() - start

    import torch
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    torch.set_num_threads(1)
    collator = DataCollatorForLanguageModeling(
        BertTokenizerFast(str(vocab_dir / "vocab.txt")), mlm_probability=0.15
    )
    padded = [torch.from_numpy(ex.ids.astype(np.int64)) for ex in batches]  # already padded with [PAD]
    torch.manual_seed(0)  # the collator draws from torch's global generator
    start = time.process_time()
    for dense in padded:
        collator.torch_mask_tokens(dense.clone())
    timings["HF DataCollatorForLanguageModeling (torch, Bernoulli per token)"] = time.process_time() - start

    start = time.process_time()
    reference_loop(batches[0], vocab, seed=0)
    timings["per-example Python loop (as create_pretraining_data.py)"] = (
        (time.process_time() - start) * n / len(batches[0])
    )

    ours = timings[f"corpusprep --mask-strategy {strategies.names()[0]} (numpy, exact count)"]
    print(
        f"\nmasking only, {n:,} examples, one core, by CPU time (the loop: from {len(batches[0]):,}):"
    )
    for name, seconds in timings.items():
        print(f"  {name:66} {n / seconds:>10,.0f} examples/s   ours x{seconds / ours:6.1f}")


def row_groups(shard: Path, reads: int = 400) -> None:
    table = pq.read_table(shard)
    print(
        f"\nrandom single-row reads, pa.memory_map + ParquetFile.read_row_group ({table.num_rows:,} rows):"
    )
    print(f"  {'compression':12} {'row group':>9} {'MB':>7} {'rows/s':>8} {'group MB/s':>10}")
    for compression in ("zstd", "lz4", "none"):
        for size in (128, 256, 1024, 4096):
            path = shard.with_name(f"rg-{compression}-{size}.parquet")
            pq.write_table(
                table,
                path,
                row_group_size=size,
                compression=None if compression == "none" else compression,
                use_dictionary=False,
                write_statistics=False,
            )
            file = pq.ParquetFile(pa.memory_map(str(path)))
            rows = np.random.default_rng(0).integers(0, table.num_rows, reads)
            start = time.perf_counter()
            for r in rows:
                file.read_row_group(int(r) // size).slice(int(r) % size, 1)
            seconds = time.perf_counter() - start
            print(
                f"  {compression:12} {size:9,} {path.stat().st_size / 1e6:7.1f} {reads / seconds:8,.0f} "
                f"{reads * size / seconds / 1e6 * table.nbytes / table.num_rows:10,.0f}"
            )
            path.unlink()


def subset(pairs: Path, cache: Path) -> Path:
    """The first dupe pass of a build-pairs directory (`*-d0.parquet` files and stats.json), as symlinks."""
    out = cache / f"{pairs.name}-d0"
    shutil.rmtree(out, ignore_errors=True)
    for path in pairs.glob("*/*-d0.parquet"):
        (out / path.parent.name).mkdir(parents=True, exist_ok=True)
        (out / path.parent.name / path.name).symlink_to(path.resolve())
    shutil.copy(pairs / "stats.json", out / "stats.json")
    return out


def rows(pairs: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in pairs.glob("*/*.parquet"))


STAGES = {  # stage: (functions whose cumulative CPU it is, functions counted elsewhere)
    "pass 1: read pairs (Parquet), deal to shards": (["mask_file"], ["examples_from_pairs", "mask_examples",
                                                                     "write_group"]),
    "pass 1: build [CLS] A [SEP] B [SEP] + checks": (["examples_from_pairs"], []),
    "pass 1: masking": (["mask_examples"], []),
    "pass 1: spill write": (["write_group"], []),
    "pass 2: spill read + shuffle": (["read_groups"], []),
    "pass 2: to Arrow": (["to_table"], []),
    "pass 2: Parquet write": (["write_parquet"], []),
    "pass 2: sha256": (["sha256_file"], []),
}


def profile(pairs: Path, vocab: Path, out: Path) -> None:
    """CPU time per stage of an in-process build_shards under cProfile (timer: process time)."""
    import cProfile
    import pstats

    from corpusprep.shard.build import build_shards
    from corpusprep.shard.options import ShardOptions

    shutil.rmtree(out, ignore_errors=True)
    profiler = cProfile.Profile(time.process_time)
    start = time.process_time()
    profiler.runcall(build_shards, pairs, vocab, out, ShardOptions(), workers=1, progress=False)
    total = time.process_time() - start
    cumulative: dict[str, float] = {}
    for (path, _, name), (_, _, _, ct, _) in pstats.Stats(profiler).stats.items():
        if "corpusprep" in path:
            cumulative[name] = cumulative.get(name, 0.0) + ct
    n = rows(pairs)
    print(f"\nCPU by stage, in-process build_shards of {n:,} pairs, one worker (cProfile, process time):")
    counted = 0.0
    for stage, (names, minus) in STAGES.items():
        seconds = sum(cumulative.get(f, 0.0) for f in names) - sum(cumulative.get(f, 0.0) for f in minus)
        counted += seconds
        print(f"  {stage:48} {seconds:6.2f} s {seconds / n * 1e6:6.2f} us/example {seconds / total:6.1%}")
    rest = total - counted
    print(f"  {'other (vocab, planning, markers, fsync)':48} {rest:6.2f} s {rest / n * 1e6:6.2f} us/example "
          f"{rest / total:6.1%}")
    print(f"  {'total':48} {total:6.2f} s {total / n * 1e6:6.2f} us/example")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=Path, help="a build-pairs directory made with --dupe-factor 4")
    parser.add_argument("--synthetic", type=int, default=100_000, help="synthetic pairs at 1x (4x: 4 times)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--text-mb", type=float, default=8.0, help="corpus text encoded for the token stream")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/corpusprep-bench-shard"))
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--row-groups", action="store_true")
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    if not SHARED.exists():
        raise SystemExit(f"needs {SHARED}")
    vocab_dir, stream = prepare(args.cache, args.text_mb)
    if args.pairs:
        inputs = {1: subset(args.pairs, args.cache), 4: args.pairs}
        print(f"pairs: {args.pairs} (1x: its first dupe pass); vocab bert-base-uncased")
    else:
        inputs = {}
        for scale in (1, 4):
            n = args.synthetic * scale
            inputs[scale] = pairs = args.cache / f"pairs-{n}"
            if not (pairs / "stats.json").exists():
                files = [PAIRS_PER_FILE] * (n // PAIRS_PER_FILE) + (
                    [n % PAIRS_PER_FILE] if n % PAIRS_PER_FILE else []
                )
                write_pairs_dir(pairs, stream, {"train": files, "validation": [n // 20]})
        print(f"synthetic pairs from {len(stream):,} tokens of {args.text_mb:g} MB of enwiki_AA; "
              "vocab bert-base-uncased")
    print(
        f"{'input':>6} {'examples':>9} {'wall s':>7} {'cpu s':>7} {'ex/s':>9} {'ex/s/core':>10} {'RSS':>9}"
    )
    runs = {}
    for scale, pairs in inputs.items():
        examples = rows(pairs)
        runs[scale] = result = run_cli(pairs, vocab_dir, args.cache / f"shards-{scale}x", args.workers)
        result["examples"] = examples
        print(
            f"{scale:>5}x {examples:>9,} {result['wall']:7.1f} {result['cpu']:7.1f} "
            f"{examples / result['wall']:9,.0f} {examples / result['cpu']:10,.0f} {result['rss_mb']:7.0f} MB"
        )
    for strategy, label in (("whole-word", "1x wwm"), ("span", "1x span")):
        result = run_cli(inputs[1], vocab_dir, args.cache / f"shards-1x-{strategy}", args.workers, strategy)
        examples = runs[1]["examples"]
        print(
            f"{label:>6} {examples:>9,} {result['wall']:7.1f} {result['cpu']:7.1f} "
            f"{examples / result['wall']:9,.0f} {examples / result['cpu']:10,.0f} {result['rss_mb']:7.0f} MB"
        )
    extra, cpu = runs[4]["examples"] - runs[1]["examples"], runs[4]["cpu"] - runs[1]["cpu"]
    print(f"marginal (4x - 1x): {extra / cpu:,.0f} examples/s per core by CPU time")
    print(f"command: {runs[4]['command']}")
    if args.profile:
        profile(inputs[1], vocab_dir, args.cache / "shards-profile")
    if not args.no_peers:
        masking_peers(stream, vocab_dir)
    if args.row_groups:
        row_groups(args.cache / "shards-1x" / "train" / "shard-00000.parquet")


if __name__ == "__main__":
    main()
