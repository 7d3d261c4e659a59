"""`corpusprep vocab` against calling the `tokenizers` WordPiece trainer directly, on the same text.

    .venv/bin/python bench/vocab.py                   # first 20 MB of ../shared/corpus/enwiki_AA.txt.xz
    .venv/bin/python bench/vocab.py --mb 50 --repeat 2

- direct: `Tokenizer.train_from_iterator` over the documents already in memory (a Python list), with the same
  normalizer, pre-tokenizer and trainer settings: the floor any wrapper can reach.
- corpusprep: `build_vocab` end to end from an uncompressed JSONL file of the same documents (written to a
  temporary directory first, not timed): reading, batching, training, the [UNK]/pieces-per-word sample, and
  writing vocab.txt, tokenizer.json and the report atomically.
Target: corpusprep within 1.2x of direct. Best of --repeat runs each, alternating, on all cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from corpusprep.engine.stage import RunContext
from corpusprep.read import ReadOptions, iter_documents
from corpusprep.tokenize import SPECIAL_TOKENS
from corpusprep.tokenize.vocab import VocabOptions, build_vocab

SHARED = Path(__file__).resolve().parents[2] / "shared"


def load_texts(path: Path, megabytes: float) -> list[str]:
    """Whole documents from the start of `path` (any format the reader knows), up to `megabytes` of UTF-8."""
    texts, size = [], 0
    for doc in iter_documents([path], ReadOptions()):
        texts.append(doc.text)
        size += len(doc.text.encode("utf-8"))
        if size >= megabytes * 1e6:
            break
    return texts


def train_direct(texts: list[str], options: VocabOptions) -> tuple[float, set[str]]:
    start = time.perf_counter()
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    uncased = not options.cased
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=uncased, strip_accents=uncased)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=options.vocab_size,
        min_frequency=options.min_frequency,
        limit_alphabet=options.limit_alphabet,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer, length=len(texts))
    return time.perf_counter() - start, set(tokenizer.get_vocab())


def train_ours(corpus: Path, out: Path, options: VocabOptions) -> tuple[float, dict]:
    start = time.perf_counter()
    report = build_vocab([corpus], out, options, context=RunContext(overwrite=True, progress=False))
    return time.perf_counter() - start, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", type=Path, default=SHARED / "corpus" / "enwiki_AA.txt.xz")
    parser.add_argument("--mb", type=float, default=20.0, help="megabytes of text to train on")
    parser.add_argument("--vocab-size", type=int, default=30000)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each; the best time counts")
    args = parser.parse_args()
    if not args.input.exists():
        sys.exit(f"{args.input}: not found (needs ../shared, or pass --input)")
    print("$ .venv/bin/python bench/vocab.py " + " ".join(sys.argv[1:]))
    options = VocabOptions(vocab_size=args.vocab_size)
    texts = load_texts(args.input, args.mb)
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(f"input: {args.input.name}, first {len(texts):,} documents, {megabytes:.1f} MB; "
          f"vocab size {args.vocab_size:,}")
    with tempfile.TemporaryDirectory(prefix="bench-vocab-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        with open(corpus, "w", encoding="utf-8") as f:
            for i, text in enumerate(texts):
                f.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
        direct_times, our_times = [], []
        for run in range(args.repeat):
            seconds, direct_vocab = train_direct(texts, options)
            direct_times.append(seconds)
            seconds, report = train_ours(corpus, Path(tmp) / f"vocab{run}", options)
            our_times.append(seconds)
        ours_vocab = set((Path(tmp) / "vocab0" / "vocab.txt").read_text(encoding="utf-8").splitlines())
    direct, ours = min(direct_times), min(our_times)
    rows = [
        ("tokenizers direct (in memory)", direct, direct_times),
        ("corpusprep vocab (from file)", ours, our_times),
    ]
    print(f"{'':32}{'seconds':>9}{'MB/s':>8}   runs")
    for name, best, times in rows:
        print(f"{name:32}{best:9.2f}{megabytes / best:8.2f}   " + " ".join(f"{t:.2f}" for t in times))
    train = report["seconds"]["train"]
    print(f"ratio corpusprep / direct: {ours / direct:.2f}x (target <= 1.20x); of corpusprep's "
          f"{report['seconds']['total']:.2f} s, reading+training {train:.2f} s")
    shared = len(ours_vocab & direct_vocab)
    print(f"vocab overlap: {shared:,} of {len(ours_vocab):,} tokens "
          "(differences: upstream tie-breaking, huggingface/tokenizers#1794)")
    print(f"sample [UNK] rate {report['sample']['unk_rate']:.4%}, "
          f"{report['sample']['pieces_per_word']:.3f} pieces per word")


if __name__ == "__main__":
    main()
