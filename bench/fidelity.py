"""Learning fidelity: does our data teach a BERT at least as well as the peers' data, at equal compute?

    PYTHONPATH=. .venv/bin/python bench/fidelity.py [--mb 4] [--steps 1500] [--seeds 2]
        [--length 128] [--vocab-size 0] [--no-dropout]
        [--arms ours-nsp google-nsp ours-mlm hf-grouped hf-lines] [--work DIR]
        [--google-dir DIR] [--downstream UD_DIR]

The same model (`--preset`, tiny by default), steps, batch and learning rate, trained by our trainer on
each arm's training rows, built from the same text (a prefix of ../shared/corpus/enwiki_AA.txt.xz) with the
same vocab (Google's bert-base-uncased vocab.txt):

  ours-nsp    `corpusprep build-pairs` (NSP) + `corpusprep shard`: our pairs, our masking (static, dupe 5)
  ours-nsp-doc  the same with `--short-seq-by document`: short targets drawn per document, as Google's
  google-nsp  Google's create_pretraining_data.py (same flags: length 128, dupe 5, short_seq_prob 0.1,
              20 predictions at 0.15), its TFRecords converted row for row into our shard format, masks
              included (Google's 10% random tokens come from the whole vocab)
  ours-mlm    `build-pairs --objective none` (packed whole sentences, RoBERTa FULL-SENTENCES) + `shard`,
              trained with --dynamic-masking (masked afresh every epoch)
  hf-grouped  Hugging Face's run_mlm.py route: every line tokenized with [CLS] ... [SEP], concatenated and cut
              into blocks of 128, `DataCollatorForLanguageModeling` masking every epoch afresh (no cap on
              the predictions; random tokens from the whole vocab); one row a block, attention over it all
  hf-lines    run_mlm.py --line_by_line: each line (a Wikipedia paragraph) one row, truncated at 128

Like is compared with like: NSP data (ours-nsp vs google-nsp: both learn NSP beside MLM) and MLM-only data
(ours-mlm vs hf-grouped and hf-lines). Every model is scored the same way on ONE held-out set: documents
held out of every arm's training text (by a hash of their id), cut by our pipeline into rows of whole
sentences of one document (`build-pairs --objective none --no-pack`), each row `[CLS] sentences [SEP]`, one
segment, masked `--maskings` times (masking k from (seed 0, "eval", k), as the trainer's evaluation does):
masked-LM accuracy on identical positions for every model. Its standard error counts rows as the unit
(`trainer.validation.ratio_se`); differences between two models are paired (same rows, same masks), so their
standard error is far below either score's. The NSP arms are also scored on held-out NSP pairs (our
build-pairs on the held-out documents): MLM and NSP accuracy. "seed" i changes everything random: the
data (our seed, Google's --random_seed, HF's masking and order: 12345 + i) and the training (init, order,
dropout: i).

Google's script is not part of the project: --google-dir is a folder with its create_pretraining_data.py and
tokenization.py, or the git directory of a google-research/bert snapshot; its own main() runs in this
process with TensorFlow's part (flags, logging, file and record writing) stood in for
(bench/google_script.py), so no TensorFlow is needed. Without it the google-nsp arm is skipped, and said
to be. Without the shared folder (--shared: enwiki_AA.txt.xz and bert-base-uncased-vocab.txt) the bench
says so and exits 0.
The downstream score (UPOS on UD English-EWT) comes from `python -m trainer.evaluate` (`--downstream DIR`
with en_ewt-ud-train.conllu[.xz] and -dev); without that module, it says so and skips it.

Runs, data and scores are kept under --work: a rerun reuses what is finished (the trainer finds a finished
run and does nothing), so seeds or arms can be added later.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from build_pairs import SHARED, make_vocab, prefix_corpus
from google_script import create_pretraining_data, script_dir

from corpusprep.engine.artifact import Artifact
from corpusprep.engine.manifest import sha256_file
from corpusprep.engine.outputs import OUTPUT_KINDS
from corpusprep.engine.rng import rng_for, unit_interval
from corpusprep.mask import MaskVocab
from corpusprep.read import ReadOptions, iter_documents
from corpusprep.shard.schema import SCHEMA_VERSION, shard_schema
from corpusprep.split import get_splitter
from corpusprep.tokenize import SPECIAL_TOKENS, VocabInfo
from trainer.config import DataConfig, ModelConfig
from trainer.data import ShardStream
from trainer.model import BertForPreTraining
from trainer.resume import init_weights
from trainer.shards import open_shards
from trainer.validation import ratio_moments, ratio_se, score_rows

ARMS = {  # name: (objective the model learns, group compared within, how its rows are made)
    "ours-nsp": ("nsp", "NSP data", "build-pairs + shard"),
    "ours-nsp-doc": ("nsp", "NSP data", "build-pairs --short-seq-by document (Google's draw) + shard"),
    "google-nsp": ("nsp", "NSP data", "create_pretraining_data.py"),
    "ours-mlm": ("none", "MLM-only data", "build-pairs --objective none (packed) + shard, dynamic masking"),
    "hf-grouped": (
        "none",
        "MLM-only data",
        "run_mlm.py: group_texts blocks + DataCollatorForLanguageModeling",
    ),
    "hf-lines": ("none", "MLM-only data", "run_mlm.py --line_by_line + DataCollatorForLanguageModeling"),
}
REFERENCE = {"NSP data": "ours-nsp", "MLM-only data": "ours-mlm"}  # the paired differences are against ours
LENGTH, DUPE, PREDICTIONS, MASKED_LM_PROB = 128, 5, 20, 0.15
DATA_SEED = 12345
CHECKPOINT_EVERY = 500  # a killed bench resumes each run from its last checkpoint (--resume)


def corpusprep(*args: str) -> None:
    command = [sys.executable, "-m", "corpusprep", *args, "--no-progress"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


# ---------------------------------------------------------------- text


def prepare_text(work: Path, mb: float, heldout: float, shared: Path) -> dict[str, Path]:
    """The prefix split by document into training and held-out text, in the forms each arm reads: JSONL
    (ours), one sentence a line with a blank line between documents (Google's input, cut by our splitter
    as build-pairs cuts it), one paragraph a line (Hugging Face's `text` dataset)."""
    paths = {name: work / name for name in ("train.jsonl", "heldout.jsonl", "train-sentences.txt",
                                            "train-lines.txt")}
    if all(p.exists() for p in paths.values()):
        return paths
    raw = prefix_corpus(mb, work / "enwiki-prefix.txt", shared)
    split = get_splitter("default")
    with contextlib.ExitStack() as stack:
        out = {name: stack.enter_context(open(p, "w", encoding="utf-8")) for name, p in paths.items()}
        for doc in iter_documents([raw], ReadOptions()):
            if unit_interval(0, "fidelity-heldout", doc.id) < heldout:
                out["heldout.jsonl"].write(json.dumps({"id": doc.id, "text": doc.text}) + "\n")
                continue
            out["train.jsonl"].write(json.dumps({"id": doc.id, "text": doc.text}) + "\n")
            out["train-sentences.txt"].write(
                "".join(s.replace("\n", " ") + "\n" for s in split(doc.text)) + "\n"
            )
            out["train-lines.txt"].write(
                "".join(line + "\n" for line in doc.text.splitlines() if line.strip())
            )
    return paths


# ---------------------------------------------------------------- each arm's rows, as shards


def ours(
    text: Path,
    vocab: Path,
    out: Path,
    seed: int,
    objective: str,
    pack: bool = True,
    dupe: int = DUPE,
    extra: tuple[str, ...] = (),
) -> Path:
    """`corpusprep build-pairs` + `corpusprep shard`, every row in the train split."""
    pairs = out.with_name(out.name + "-pairs")
    extra = ["--objective", objective, *extra] + (["--no-pack"] if objective == "none" and not pack else [])
    corpusprep("build-pairs", str(text), "--vocab", str(vocab), "-o", str(pairs), "--max-seq-length",
               str(LENGTH), "--dupe-factor", str(dupe), "--validation-fraction", "0", "--seed", str(seed),
               *extra)
    corpusprep("shard", str(pairs), "--vocab", str(vocab), "-o", str(out), "--seed", str(seed))
    return out


def write_shards(out: Path, vocab_dir: Path, objective: str, rows: dict[str, list], seed: int) -> Path:
    """Peer rows (flat token arrays and per-row lengths) as a shards directory our trainer reads: Parquet in
    our schema, shuffled, a manifest and the artifact record, as `corpusprep shard` leaves them."""
    vocab = VocabInfo.load(vocab_dir / "vocab.txt")
    n = len(rows["rows"])
    order = rng_for(seed, "fidelity-shuffle").permutation(n)

    def column(values, lengths, dtype):
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        values = np.asarray(values)
        starts, ends = offsets[:-1][order], offsets[1:][order]
        flat = np.concatenate([values[a:b] for a, b in zip(starts, ends, strict=True)]) if n else values
        new_offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.asarray(lengths)[order], out=new_offsets[1:])
        return pa.ListArray.from_arrays(pa.array(new_offsets), pa.array(flat.astype(dtype)))

    lengths, predictions = np.asarray(rows["rows"]), np.asarray(rows["predictions"])
    arrays = [
        column(rows["ids"], lengths, np.uint16),
        column(rows["types"], lengths, np.uint8),
        column(rows["positions"], predictions, np.uint16),
        column(rows["labels"], predictions, np.uint16),
        pa.array(np.asarray(rows["nsp"])[order].astype(np.uint8)) if objective == "nsp"
        else column(np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64), np.uint16),  # one piece a row
        pa.array(lengths[order].astype(np.uint16)),
    ]
    table = pa.Table.from_arrays(arrays, schema=shard_schema(np.dtype(np.uint16), objective))
    (out / "train").mkdir(parents=True, exist_ok=True)
    entries = []
    for index, start in enumerate(range(0, n, 50_000)):
        path = out / "train" / f"shard-{index:05d}.parquet"
        pq.write_table(table.slice(start, 50_000), path, row_group_size=256, compression="lz4")
        entries.append({"path": path.relative_to(out).as_posix(), "rows": min(50_000, n - start),
                        "bytes": path.stat().st_size, "sha256": sha256_file(path)})
    shutil.copyfile(vocab_dir / "vocab.txt", out / "vocab.txt")
    manifest = {
        "schema_version": SCHEMA_VERSION,  # the trainer checks a manifest as any other untrusted file
        "token_dtype": "uint16",
        "objective": objective,
        "options": {
            "masked_lm_prob": MASKED_LM_PROB,
            "max_predictions_per_seq": PREDICTIONS,
            "mask_strategy": "token",
        },
        "max_seq_length": LENGTH,
        "vocab": {
            "path": str(vocab_dir.resolve()),
            "sha256": vocab.sha256,
            "size": vocab.size,
            "special_ids": {t: vocab.ids[t] for t in SPECIAL_TOKENS},
        },
        "splits": {"train": {"shards": entries, "examples": n}},
        "totals": {"examples": n},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    names = [e["path"] for e in entries] + ["vocab.txt", "manifest.json"]
    with Artifact(out, OUTPUT_KINDS["shards"].adopting(names), {"peer": out.name}, quiet=True) as art:
        if art.complete is None:
            art.commit(files=names)
    return out


def google(paths: dict, vocab: Path, out: Path, seed: int, directory: Path) -> Path:
    """create_pretraining_data.py's own main (bench/google_script.py: TensorFlow's part stood in for), its
    instances written into our format row for row, masks included."""
    rows = create_pretraining_data(
        directory, input_file=str(paths["train-sentences.txt"]), vocab_file=str(vocab / "vocab.txt"),
        do_lower_case=True, max_seq_length=LENGTH, max_predictions_per_seq=PREDICTIONS,
        masked_lm_prob=MASKED_LM_PROB, random_seed=seed, dupe_factor=DUPE, short_seq_prob=0.1,
    )
    return write_shards(out, vocab, "nsp", rows, seed)


def hugging_face(paths: dict, vocab: Path, out: Path, seed: int, grouped: bool, rows_needed: int) -> Path:
    """run_mlm.py's data: its tokenization (grouped blocks or one line a row), then as many epochs as the
    run reads, each shuffled and masked by DataCollatorForLanguageModeling, as its Trainer feeds them."""
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling  # the bench's peer

    tokenizer = BertTokenizerFast(vocab=str(vocab / "vocab.txt"), do_lower_case=True)
    lines = paths["train-lines.txt"].read_text(encoding="utf-8").splitlines()
    if grouped:  # run_mlm.py's tokenize_function + group_texts: remainder dropped
        encoded = tokenizer(lines, return_special_tokens_mask=True)
        ids = [t for row in encoded["input_ids"] for t in row]
        special = [m for row in encoded["special_tokens_mask"] for m in row]
        blocks = len(ids) // LENGTH
        cut = [slice(i * LENGTH, (i + 1) * LENGTH) for i in range(blocks)]
        examples = [{"input_ids": ids[c], "special_tokens_mask": special[c]} for c in cut]
    else:  # --line_by_line: empty lines dropped, each line truncated at max_seq_length
        encoded = tokenizer(lines, truncation=True, max_length=LENGTH, return_special_tokens_mask=True)
        pairs = zip(encoded["input_ids"], encoded["special_tokens_mask"], strict=True)
        examples = [{"input_ids": i, "special_tokens_mask": m} for i, m in pairs]
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=MASKED_LM_PROB)
    torch.manual_seed(seed)
    columns = {k: [] for k in ("ids", "types", "positions", "labels", "rows", "predictions")}
    epochs = math.ceil(rows_needed / len(examples))
    for epoch in range(epochs):
        order = rng_for(seed, "fidelity-hf-epoch", epoch).permutation(len(examples))
        for start in range(0, len(order), 256):
            chosen = [examples[i] for i in order[start : start + 256]]
            batch = collator([dict(e) for e in chosen])
            for row, example in enumerate(chosen):
                n = len(example["input_ids"])
                labels = batch["labels"][row, :n]
                positions = torch.nonzero(labels != -100).flatten()
                columns["ids"] += batch["input_ids"][row, :n].tolist()
                columns["types"] += [0] * n
                columns["positions"] += positions.tolist()
                columns["labels"] += labels[positions].tolist()
                columns["rows"].append(n)
                columns["predictions"].append(len(positions))
    print(f"  {out.name}: {len(examples):,} examples an epoch, {epochs} epochs masked", flush=True)
    return write_shards(out, vocab, "none", columns, seed)


# ---------------------------------------------------------------- training and scoring


def train(shards: Path, run_dir: Path, seed: int, args, dynamic: bool, env: dict) -> dict:
    command = [sys.executable, "-m", "trainer.run", "--shards", str(shards), "--run-dir", str(run_dir),
               "--preset", args.preset, "--steps", str(args.steps), "--batch-size", str(args.batch_size),
               "--lr", str(args.lr), "--seed", str(seed), "--device", "cpu", "--log-every", "100",
               "--checkpoint-every", str(min(args.steps, CHECKPOINT_EVERY)), "--set", "checkpoint.keep=1",
               "--resume"]
    command += ["--dynamic-masking"] if dynamic else []
    if args.no_dropout:
        command += ["--set", "model.dropout=0.0", "--set", "model.attention_dropout=0.0"]
    log_path = run_dir.with_suffix(".log")
    started = time.perf_counter()
    with open(log_path, "w") as log:  # a file, not a pipe: wait4 gives this child's own CPU time
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = status
    if status:
        sys.exit(f"failed ({status}): {shlex.join(command)}; see {log_path}")
    wall, cpu_s = time.perf_counter() - started, usage.ru_utime + usage.ru_stime
    record = run_dir / "bench.json"
    if "nothing to do" not in log_path.read_text():
        record.write_text(json.dumps({"wall_s": wall, "cpu_s": cpu_s, "load": os.getloadavg()[0]}))
    return json.loads(record.read_text())


def load_model(run_dir: Path, heldout: Path, objective: str) -> BertForPreTraining:
    """The run's weights, with the sentence head when scoring a sentence task (objective), else without."""
    shards = open_shards(heldout)
    bert, state, _ = init_weights(run_dir, ModelConfig(dropout=0.0, attention_dropout=0.0),
                                             shards.vocab.size, shards.manifest["vocab"]["sha256"],
                                             heldout / "manifest.json", objective)
    model = BertForPreTraining(bert)
    model.load_state_dict(state, strict=False)
    return model.eval()


def score(model: BertForPreTraining, heldout: Path, maskings: int) -> torch.Tensor:
    """[R, 6] per held-out row, summed over the maskings (k from (0, "eval", k): the same for every model)."""
    shards = open_shards(heldout)
    mask_vocab = MaskVocab.from_vocab(shards.vocab_info())
    total = None
    for k in range(maskings):
        stream = ShardStream(shards, "train", DataConfig(batch_size=64), 0, shuffle=False, loop=False,
                             mask_vocab=mask_vocab, mask_key=("eval", k))
        rows = score_rows(model, stream, 0, torch.device("cpu"), contextlib.nullcontext)
        total = rows if total is None else total + rows
    return total


def score_run(run_dir: Path | None, part: str, heldout: dict, maskings: int, like: Path | None = None):
    """A run's per-row sums on one held-out set ("mlm"; "nsp": the held-out pairs, with the sentence head),
    kept beside the run (a rerun reads them); run_dir None: `like`'s model randomly initialised (seed 0)."""
    if run_dir is None:
        torch.manual_seed(0)
        model = BertForPreTraining(load_model(like, heldout[part], "none").config).eval()
        return score(model, heldout[part], maskings).numpy()
    cached = run_dir / f"scores-{part}-{maskings}.npy"
    if not cached.exists():
        scored = score(load_model(run_dir, heldout[part], "none" if part == "mlm" else part), heldout[part],
                       maskings)
        np.save(cached, scored.numpy())
    return np.load(cached, allow_pickle=False)


def accuracy(rows: torch.Tensor, column: int = 1) -> tuple[float, float]:
    """Accuracy and its standard error (rows as the unit) from score_rows' per-row sums."""
    correct, count = rows[:, column], rows[:, column + 1]
    return float(correct.sum() / count.sum()), ratio_se(ratio_moments(correct, count).tolist())


def downstream(run_dir: Path, ud: Path, out: Path, seeds: int, first_seed: int) -> dict | None:
    """UPOS on UD English-EWT through `python -m trainer.evaluate` (the evaluate command), pre-trained
    beside random init, fine-tuning seeds first_seed, first_seed + 1, ...: its evaluation.json's dev split
    (None when this checkout has no such command)."""
    if importlib.util.find_spec("trainer.evaluate") is None:
        return None
    done = out / "evaluation.json"  # by an earlier run: read back, not redone (a fresh copy of ../shared
    if done.is_file():  # reads as changed inputs to the evaluate command)
        return json.loads(done.read_text())["splits"]["dev"]
    files = {s: next(iter(sorted(ud.glob(f"*-ud-{s}.conllu*"))), None) for s in ("train", "dev")}
    command = [sys.executable, "-m", "trainer.evaluate", str(run_dir), "--train", str(files["train"]),
               "--dev", str(files["dev"]), "--seeds", str(seeds), "--seed", str(first_seed),
               "--max-length", str(LENGTH), "--workers", "2", "-o", str(out)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "evaluation.json").read_text())["splits"]["dev"]


def summarize(values: list[float]) -> str:
    mean = float(np.mean(values))
    spread = f" (±{np.std(values, ddof=1):.4f} sd)" if len(values) > 1 else ""
    return f"{mean:.4f}{spread}"


def build_vocab(work: Path, paths: dict, size: int, shared: Path) -> Path:
    """Google's vocab (size 0), or a WordPiece vocab of `size` trained on the training text alone."""
    vocab = work / (f"vocab-{size}" if size else "vocab-google")
    if not (vocab / "vocab.txt").exists():
        if size:
            corpusprep("vocab", str(paths["train.jsonl"]), "-o", str(vocab), "--vocab-size", str(size))
        else:
            make_vocab(vocab, shared)
    return vocab


def build_data(arm: str, i: int, work: Path, paths: dict, vocab: Path, args) -> Path:
    shards = work / f"{arm}-data{i}"
    if (shards / "manifest.json").exists():
        return shards
    started, seed = time.perf_counter(), DATA_SEED + i
    if arm.startswith("ours"):
        extra = ("--short-seq-by", "document") if arm == "ours-nsp-doc" else ()
        ours(paths["train.jsonl"], vocab, shards, seed, ARMS[arm][0], extra=extra)
    elif arm == "google-nsp":
        google(paths, vocab, shards, seed, args.google_dir)
    else:
        hugging_face(paths, vocab, shards, seed, arm == "hf-grouped", args.steps * args.batch_size)
    print(f"  {arm} data {i}: {time.perf_counter() - started:.0f} s", flush=True)
    return shards


def baseline(heldout: Path, maskings: int) -> dict[str, float]:
    """What knowing nothing scores: the held-out masks' most frequent original token, always predicted."""
    shards = open_shards(heldout)
    mask_vocab = MaskVocab.from_vocab(shards.vocab_info())
    counts = np.zeros(shards.vocab.size, dtype=np.int64)
    for k in range(maskings):
        stream = ShardStream(shards, "train", DataConfig(batch_size=256), 0, shuffle=False, loop=False,
                             mask_vocab=mask_vocab, mask_key=("eval", k))
        for batch in stream:
            counts += np.bincount(batch["mlm_labels"].numpy(), minlength=len(counts))
    return {"unigram": counts.max() / counts.sum()}


def main() -> None:
    global LENGTH, PREDICTIONS  # --length: every arm's rows, the held-out set and the evaluation follow it
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4, help="MB of the enwiki prefix")
    parser.add_argument("--heldout", type=float, default=0.1, help="share of documents held out")
    parser.add_argument(
        "--vocab-size", type=int, default=0, help="0: Google's bert-base-uncased; N: WordPiece of the text"
    )
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--length", type=int, default=LENGTH, help="tokens a row (15%% predicted)")
    parser.add_argument("--no-dropout", action="store_true", help="train without dropout (the CPU recipe's)")
    parser.add_argument("--maskings", type=int, default=8, help="maskings of the held-out rows")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per training run")
    parser.add_argument("--parallel", type=int, default=2, help="training runs at a time")
    parser.add_argument("--shared", type=Path, default=SHARED, help="enwiki_AA.txt.xz and Google's vocab")
    parser.add_argument("--work", type=Path, default=Path("/tmp/fidelity"), help="kept between runs")
    parser.add_argument("--google-dir", type=Path, help="Google's script: folder or git dir")
    parser.add_argument("--downstream", type=Path, help="UD English-EWT dir: UPOS via trainer.evaluate")
    parser.add_argument(
        "--downstream-seeds",
        type=int,
        default=1,
        help="fine-tuning runs per model and init (the pre-training seeds give the spread)",
    )
    args = parser.parse_args()
    LENGTH, PREDICTIONS = args.length, math.ceil(args.length * MASKED_LM_PROB)  # Google: 20 at 128
    torch.set_num_threads(args.threads)
    print("reproduce:", shlex.join([sys.executable, *sys.argv]))
    print(f"{len(os.sched_getaffinity(0))} cores, load {os.getloadavg()[0]:.1f} at start; torch "
          f"{torch.__version__}; model {args.preset}, {args.steps} steps of {args.batch_size} x {LENGTH} "
          f"tokens, lr {args.lr}; {args.parallel} runs at a time, {args.threads} thread(s) each")
    needed = ("enwiki_AA.txt.xz", "bert-base-uncased-vocab.txt")
    missing = [name for name in needed if not (args.shared / name).is_file()]
    if missing:
        print(f"skipped: {', '.join(missing)} not in {args.shared} (--shared)")
        return
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    if "google-nsp" in args.arms:
        args.google_dir = script_dir(args.google_dir, work / "google-script")
        if args.google_dir is None:
            print("google-nsp: skipped, no create_pretraining_data.py (--google-dir: a folder or a git dir)")
            args.arms.remove("google-nsp")
    paths = prepare_text(work, args.mb, args.heldout, args.shared)
    vocab = build_vocab(work, paths, args.vocab_size, args.shared)
    work = work / (f"with-{vocab.name}" + (f"-L{LENGTH}" if LENGTH != 128 else ""))  # all below follows them
    work.mkdir(exist_ok=True)
    heldout = {"mlm": work / "heldout-mlm", "nsp": work / "heldout-nsp"}
    for name, objective in (("mlm", "none"), ("nsp", "nsp")):
        if not (heldout[name] / "manifest.json").exists():
            ours(paths["heldout.jsonl"], vocab, heldout[name], 0, objective, pack=False, dupe=1)
    rows = sum(f.rows for f in open_shards(heldout["mlm"]).files("train"))
    pairs = sum(f.rows for f in open_shards(heldout["nsp"]).files("train"))
    print(f"held-out: {rows:,} rows of one segment x {args.maskings} maskings; {pairs:,} NSP pairs")
    runs = [(arm, i) for i in range(args.seeds) for arm in args.arms]  # seed-major: a partial bench is paired
    data = {run: build_data(*run, work, paths, vocab, args) for run in runs}
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}

    def run(key: tuple[str, int]) -> dict:
        arm, i = key
        return train(data[key], work / f"{arm}-run{i}", i, args, arm == "ours-mlm", env)

    with ThreadPoolExecutor(args.parallel) as pool:  # subprocesses: the threads only wait
        costs = dict(zip(runs, pool.map(run, runs), strict=True))
    run_dirs = [work / f"{arm}-run{i}" for arm, i in runs]
    tasks = [(run_dir, "mlm") for run_dir in run_dirs]
    tasks += [
        (run_dir, "nsp") for run_dir, (arm, _) in zip(run_dirs, runs, strict=True) if ARMS[arm][0] == "nsp"
    ]
    scorers = ProcessPoolExecutor(len(tasks) + 1, initializer=torch.set_num_threads, initargs=(args.threads,))
    with scorers as pool:  # one set of one model per process: each is a single thread's work
        untrained = pool.submit(score_run, None, "mlm", heldout, args.maskings, run_dirs[0])
        futures = {task: pool.submit(score_run, *task, heldout, args.maskings) for task in tasks}
        scores = {task: torch.from_numpy(future.result()) for task, future in futures.items()}
        floor = {"random init": accuracy(torch.from_numpy(untrained.result()))[0]}
    results: dict[str, list[dict]] = {}
    for (arm, i), run_dir in zip(runs, run_dirs, strict=True):
        rows = scores[run_dir, "mlm"]
        result = {"seed": i, "rows": rows, "cost": costs[arm, i], "mlm": accuracy(rows)}
        if (run_dir, "nsp") in scores:
            nsp_rows = scores[run_dir, "nsp"]
            result |= {"pairs_mlm": accuracy(nsp_rows), "pairs_nsp": accuracy(nsp_rows, 4)}
        if args.downstream:
            result["downstream"] = downstream(
                run_dir, args.downstream, work / f"{arm}-ewt{i}", args.downstream_seeds, 12345 + i
            )
        results.setdefault(arm, []).append(result)
        cost = result["cost"]
        print(
            f"  {arm} seed {i}: held-out MLM acc {result['mlm'][0]:.4f} ±{result['mlm'][1]:.4f}; "
            f"{cost['wall_s']:.0f} s wall, {cost['cpu_s']:.0f} CPU s, load {cost['load']:.1f}",
            flush=True,
        )
    report(results, args, floor | baseline(heldout["mlm"], args.maskings))


def report(results: dict[str, list[dict]], args, floors: dict[str, float]) -> None:
    print(
        f"\n| group | arm | rows made by | held-out MLM acc, mean of {args.seeds} seeds (sd) | per-run SE | "
        "paired diff vs ours (SE) | NSP pairs: MLM acc | NSP acc | train wall s/run |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for arm, runs in results.items():
        objective, group, made_by = ARMS[arm]
        accs = [r["mlm"][0] for r in runs]
        se = max(r["mlm"][1] for r in runs)
        reference = results.get(REFERENCE[group])
        diff = "reference"
        if reference and arm != REFERENCE[group]:
            pairs = list(zip(runs, reference, strict=False))
            deltas = [
                float((a["rows"][:, 1] - b["rows"][:, 1]).sum() / a["rows"][:, 2].sum()) for a, b in pairs
            ]
            errors = [ratio_se(ratio_moments(a["rows"][:, 1] - b["rows"][:, 1], a["rows"][:, 2]).tolist())
                      for a, b in pairs]
            diff = f"{np.mean(deltas):+.4f} ({max(errors):.4f})"
        nsp = [
            summarize([r[k][0] for r in runs]) if objective == "nsp" else ""
            for k in ("pairs_mlm", "pairs_nsp")
        ]
        wall = np.mean([r["cost"]["wall_s"] for r in runs])
        print(
            f"| {group} | {arm} | {made_by} | {summarize(accs)} | {se:.4f} | {diff} | {nsp[0]} | {nsp[1]} | "
            f"{wall:.0f} |"
        )
    print("\nfloors on the same held-out set: " + ", ".join(f"{k} {v:.4f}" for k, v in floors.items()))
    if args.downstream:
        report_downstream(results, args)


def report_downstream(results: dict[str, list[dict]], args) -> None:
    """UPOS dev accuracy of each arm's models fine-tuned, beside the same model randomly initialised (fine-
    tuned with the same seeds); paired differences against ours by pre-training seed."""
    if any(r["downstream"] is None for runs in results.values() for r in runs):
        print("\ndownstream: trainer.evaluate is not in this checkout: not scored")
        return
    print(f"\nDownstream: UD English-EWT UPOS dev accuracy, mean over {args.seeds} pre-training seed(s) x "
          f"{args.downstream_seeds} fine-tuning seed(s) (sd over pre-training seeds)\n")
    print("| group | arm | pre-trained | random init | gain over random init | diff vs ours |")
    print("|---|---|---:|---:|---:|---:|")
    mean_of = {arm: [r["downstream"]["pretrained"]["mean"] for r in runs] for arm, runs in results.items()}
    for arm, runs in results.items():
        group = ARMS[arm][1]
        random_init = [r["downstream"]["random"]["mean"] for r in runs]
        gains = [r["downstream"]["gain"]["mean"] for r in runs]
        reference = mean_of.get(REFERENCE[group])
        diff = "reference"
        if reference and arm != REFERENCE[group]:
            diff = summarize([a - b for a, b in zip(mean_of[arm], reference, strict=False)])
        print(f"| {group} | {arm} | {summarize(mean_of[arm])} | {summarize(random_init)} | "
              f"{summarize(gains)} | {diff} |")


if __name__ == "__main__":
    main()
