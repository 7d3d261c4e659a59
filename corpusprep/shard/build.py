"""`corpusprep shard`: pairs -> masked examples -> globally shuffled, balanced, checksummed Parquet shards.

Two passes with bounded memory, both seeded and independent of the number of workers:

Every objective (`corpusprep.objectives`, read from the pairs' stats.json): nsp and sop pairs become
`[CLS] A [SEP] B [SEP]` rows with their sentence label; rows of pieces (none) become `[CLS] p1 [SEP] [CLS] p2
[SEP] ...` rows with the column where each piece starts (`document_starts`).

1. per pairs file (`mask_file`): build the examples batch by batch, mask them
   (`dupe_masks` times for training pairs) and deal them to shards: the file's examples get a random
   permutation of its planned per-shard counts as labels, and are appended to one spill file (`spill.py`)
   in groups, one per (batch, shard). Nothing but one batch is held in memory.
2. per shard (`write_shard`): read its groups from every spill file, each example straight into its row of a
   random permutation, and write the Parquet shard atomically.

The plan fixes in advance how many examples each pairs file gives each shard: shard sizes are N // S or
N // S + 1, and per file the counts are drawn by sequential multivariate hypergeometric sampling of what is
left. Together with the random labels inside each file this is exactly a uniformly random assignment of
examples to equal-sized shards, i.e. a global shuffle, without ever holding more than one shard.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from corpusprep import __version__
from corpusprep.engine import manifest as manifests
from corpusprep.engine import storage
from corpusprep.engine.executor import Task
from corpusprep.engine.files import write_json
from corpusprep.engine.records import load_record
from corpusprep.engine.rng import rng_for
from corpusprep.engine.stage import RunContext, StageRun, stage_run
from corpusprep.errors import DataError, InputError, UsageError, write_failed
from corpusprep.mask import (
    ACTIONS,
    Masking,
    MaskVocab,
    examples_from_pairs,
    examples_from_pieces,
    mask_examples,
)
from corpusprep.mask.strategies import get as mask_strategy
from corpusprep.objectives import objective as objective_spec
from corpusprep.objectives.base import Objective
from corpusprep.shard.options import DEFAULT_EXAMPLES_PER_SHARD, ShardOptions
from corpusprep.shard.schema import SCHEMA_VERSION, SPLITS
from corpusprep.shard.spill import FORMAT as SPILL_FORMAT
from corpusprep.shard.spill import read_groups, write_group
from corpusprep.shard.table import count_keys, count_masked, to_table
from corpusprep.tokenize import SPECIAL_TOKENS, VocabInfo

MANIFEST = "manifest.json"
VOCAB_COPY = "vocab.txt"  # the shards' own copy: dynamic masking and export need the tokens, wherever they go
BATCH_PAIRS = 8192  # pairs masked at once; part of the RNG keys, so changing it changes the output
DEFAULT_MAX_SEQ_LENGTH = 512
TOKEN_TYPES = (pa.uint16(), pa.uint32())  # of the pairs' token lists

# One process's rate (mask, scatter, shuffle, write) on the reference machine (2 vCPU EPYC): with default
# workers, a shard run too small for a pool to pay its start-up runs in-process (`Executor.sized`).
EXAMPLES_PER_SECOND = 90_000


@dataclass(frozen=True)
class MaskTask:
    split: str
    source: str  # pairs Parquet file
    out: str  # spill file of masked examples, in groups by destination shard (`spill.py`)
    counts: tuple[int, ...]  # examples of this file that go to each shard of the split
    dupes: int
    options: ShardOptions
    vocab: MaskVocab
    max_seq_length: int
    objective: str  # a name in corpusprep.objectives (a name pickles small for the workers)
    sha256: str | None = None  # the pairs manifest's: the file is checked against it before it is read


@dataclass(frozen=True)
class ShardTask:
    split: str
    index: int
    groups: tuple[tuple[str, list[int]], ...]  # (spill file, index entry) of each group of this shard
    out: str
    options: ShardOptions
    token_dtype: str
    pad_id: int
    cls_id: int
    objective: str


def shard_name(index: int) -> str:
    return f"shard-{index:05d}.parquet"


@contextmanager
def _writing(path: str | Path) -> Iterator[None]:
    """Turn an OSError (a full disk, say) into one clear line; atomic_path leaves no file under `path`."""
    try:
        yield
    except OSError as error:
        raise write_failed(path, error) from error


def mask_file(task: Task) -> dict[str, Any]:
    """Pass 1 for one pairs file: returns, per shard, the index entries of its groups in the spill file."""
    job: MaskTask = task.args
    opts, name = job.options, Path(job.source).name
    total = sum(job.counts)
    order = rng_for(opts.seed, "scatter", job.split, name).permutation(total)
    labels = np.repeat(np.arange(len(job.counts)), job.counts)[order]  # destination shard of each example
    per_shard: list[list[list[int]]] = [[] for _ in job.counts]
    actions = dict.fromkeys(ACTIONS, 0)
    done = 0
    spec = objective_spec(job.objective)
    masking = Masking(opts.masked_lm_prob, opts.max_predictions_per_seq, opts.mask_strategy)
    if job.sha256 is not None:  # a pairs file changed in place keeps its size: only its content tells
        manifests.verify_file(job.source, job.sha256, Path(job.source).parent.parent)
    with _writing(job.out), storage.atomic_open(job.out, "wb") as spill:
        source = storage.parquet_file(job.source)
        for dupe in range(job.dupes):
            first_row = 0
            batches = source.iter_batches(BATCH_PAIRS, columns=list(input_columns(spec)))
            for b, batch in enumerate(batches):
                build = dict(vocab=job.vocab, max_seq_length=job.max_seq_length, source=job.source,
                             first_row=first_row)
                examples = (examples_from_pieces(batch, **build) if spec.packs
                            else examples_from_pairs(batch, label=spec.pairs_label, **build))
                rng = rng_for(opts.seed, "mask", job.split, name, dupe, b)
                masked = mask_examples(examples, job.vocab, rng, masking=masking)
                for key, value in masked.counts().items():
                    actions[key] += value
                # One row gather on the grids puts the batch in shard order; each shard gets a slice.
                batch_labels = labels[done : done + len(examples)]
                grouped = masked.take(np.argsort(batch_labels, kind="stable"))
                sizes = np.bincount(batch_labels, minlength=len(job.counts))
                ends = np.cumsum(sizes)
                for shard in np.flatnonzero(sizes):
                    rows = slice(ends[shard] - sizes[shard], ends[shard])
                    per_shard[shard].append(write_group(spill, grouped.take(rows)))
                done += len(examples)
                first_row += len(examples)
    if done != total:  # the plan read the row count from the footer; the data disagrees
        raise InputError(f"{job.source}: footer says {total // job.dupes} rows, read {done // job.dupes}")
    return {"examples": done, "groups": per_shard, **actions}


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def write_shard(task: Task) -> dict[str, Any]:
    """Pass 2 for one shard: gather its examples from every spill file, shuffle, write Parquet atomically."""
    job: ShardTask = task.args
    rows = sum(entry[1] for _, entry in job.groups)
    # the row of each example
    shuffle = rng_for(job.options.seed, "shuffle", job.split, job.index).permutation(rows)
    packed = objective_spec(job.objective).packs
    masked = read_groups(job.groups, shuffle, np.dtype(job.token_dtype), job.pad_id, packed)
    out = Path(job.out)
    with _writing(out):
        write_parquet(to_table(masked, job.objective, job.cls_id), out, job.options)
    # size and sha256 come from the executor's record of this output (`Artifact.outputs`): hashed once
    counts = count_masked(masked, job.objective, job.cls_id)
    return {"path": f"{job.split}/{out.name}", "rows": len(masked), **counts}


def shard_entry(stats: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    """A shard's manifest entry from its task's stats and the executor's record of the file."""
    return {"path": stats["path"], "rows": stats["rows"], "bytes": written["size"],
            "sha256": written["sha256"]}


def write_parquet(table: pa.Table, path: Path, options: ShardOptions) -> None:
    """One shard file, atomically."""
    compression = None if options.compression == "none" else options.compression
    storage.write_table(
        table.combine_chunks(), path, row_group_size=options.row_group_size, compression=compression,
        use_dictionary=False,  # dictionary pages of token ids cost write time and random reads, save little
        write_statistics=False,  # min/max of token lists is useless to readers and costs time and bytes
    )


# --- planning ----------------------------------------------------------------------------------------------


def input_columns(spec: Objective) -> dict[str, pa.DataType | None]:
    """The pairs columns shard reads for an objective and their type (None: a token list)."""
    if spec.packs:
        return {"tokens": None, "piece_lengths": pa.list_(pa.uint16())}
    return {"tokens_a": None, "tokens_b": None, spec.pairs_label: pa.bool_()}


def pairs_objective(pairs_stats: dict) -> Objective:
    """The objective the pairs were built for: stats.json's `objective` (or `options.objective`); none
    recorded (pairs written before objectives existed) is nsp."""
    options = pairs_stats.get("options") if isinstance(pairs_stats.get("options"), dict) else {}
    return objective_spec(pairs_stats.get("objective", options.get("objective")))


def find_inputs(
    pairs_dir: Path, owned: Iterable[str], spec: Objective | None = None
) -> dict[str, list[tuple[Path, int]]]:
    """The pairs files the pairs artifact owns, per split, with their row counts (from the Parquet footers);
    files that someone else put there are not read. Their columns are checked against the objective."""
    spec = spec or objective_spec(None)
    inputs: dict[str, list[tuple[Path, int]]] = {}
    owned = set(owned)
    for split in SPLITS:
        for path in (p for p in storage.glob(pairs_dir / split, "*.parquet") if f"{split}/{p.name}" in owned):
            try:
                meta = storage.parquet_file(path)
            except (OSError, pa.ArrowInvalid) as error:
                raise DataError(f"{path}: not a readable Parquet file ({error})") from None
            columns = {f.name: f.type for f in meta.schema_arrow}
            for column, want in input_columns(spec).items():
                kind = columns.get(column)
                tokens = kind is not None and pa.types.is_list(kind) and kind.value_type in TOKEN_TYPES
                if want is None and not tokens:
                    raise InputError(f"{path}: column {column} must be list<uint16|uint32>, found {kind}")
                if want is not None and kind != want:
                    raise InputError(f"{path}: column {column} must be {want} (pairs for objective "
                                     f"{spec.name}), found {kind}")
            inputs.setdefault(split, []).append((path, meta.metadata.num_rows))
    if not inputs:
        raise InputError(f"{pairs_dir}: no {'/ or '.join(SPLITS)}/*.parquet pairs files")
    return inputs


def shard_counts(rows: dict[str, int], options: ShardOptions) -> dict[str, int]:
    """Shards per split: training gets --num-shards; every split gets the same rows per shard."""
    if options.num_shards is not None:
        per_shard = math.ceil(rows.get("train", 0) / options.num_shards) or math.ceil(
            max(rows.values()) / options.num_shards
        )
    else:
        per_shard = options.examples_per_shard or DEFAULT_EXAMPLES_PER_SHARD
    return {split: min(n, math.ceil(n / max(per_shard, 1))) for split, n in rows.items()}


def plan_split(file_examples: list[int], num_shards: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """How many examples each file gives each shard: shard sizes differ by at most one and the split between
    files is what a uniformly random shuffle of all examples would give."""
    total = sum(file_examples)
    left = np.full(num_shards, total // num_shards, np.int64)
    left[: total % num_shards] += 1
    plan = []
    for n in file_examples:
        counts = rng.multivariate_hypergeometric(left, n) if n else np.zeros(num_shards, np.int64)
        left -= counts
        plan.append(tuple(int(c) for c in counts))
    return plan


def resolve_max_seq_length(options: ShardOptions, pairs_stats: dict) -> int:
    """--max-seq-length, else the pairs'. Shorter than the pairs' is refused now: rows are built up to that
    length, so masking would stop at the first long row, after work and a progress bar."""
    found = pairs_stats.get("max_seq_length", pairs_stats.get("options", {}).get("max_seq_length"))
    if options.max_seq_length is None:
        return int(found) if found else DEFAULT_MAX_SEQ_LENGTH
    if found and options.max_seq_length < int(found):
        raise UsageError(f"--max-seq-length {options.max_seq_length}: the pairs were built with "
                         f"max_seq_length {found}, so their rows are longer; give at least {found} (or leave "
                         "it out)")
    return options.max_seq_length


# --- the run ----------------------------------------------------------------------------------------------


def build_shards(
    pairs_dir: Path,
    vocab_dir: Path,
    out_dir: Path,
    options: ShardOptions,
    *,
    context: RunContext | None = None,
) -> dict:
    """Mask, shuffle and shard a pairs directory; return the manifest (also written as out_dir/manifest.json).

    Deterministic: the same pairs, vocab, options and seed give byte-identical shards whatever the
    `context`'s executor (engine, workers). An interrupted run resumes from its completion markers; a
    finished one is not redone.
    """
    pairs_dir, out_dir = Path(pairs_dir), Path(out_dir)
    context = context or RunContext()
    vocab = VocabInfo.verified(vocab_dir)
    plan = plan_inputs(pairs_dir, vocab_dir, vocab, options)
    with stage_run(out_dir, "shards", plan.identity, inputs=[pairs_dir, vocab_dir], context=context,
                   command="shard") as run:
        if run.complete is not None:
            if context.progress:
                print(f"{storage.url(out_dir)}: already holds these shards (same pairs, vocab and options): "
                      "nothing to do")
            return load_record(out_dir / MANIFEST, "shards_manifest")
        dupes = {split: options.dupe_masks if split == "train" else 1 for split in plan.inputs}
        examples = {s: [n * dupes[s] for _, n in files] for s, files in plan.inputs.items()}
        num_shards = shard_counts({s: sum(n) for s, n in examples.items()}, options)
        seconds = sum(map(sum, examples.values())) / EXAMPLES_PER_SECOND
        masks = mask_tasks(plan, run.work, examples, num_shards, dupes, options)
        masked = run.phase("mask + scatter", mask_file, masks, unit="examples", seconds=seconds,
                           count=lambda s: s["examples"], stats_kind="mask_task")
        shards = shard_tasks(plan, out_dir, masks, masked, num_shards, vocab, options)
        written = run.phase("shuffle + write", write_shard, shards, unit="examples", seconds=seconds,
                            count=lambda s: s["rows"], stats_kind="shard_task")
        manifest = shards_manifest(plan, run, shards, written, masked, vocab, vocab_dir, options)
        source = Path(vocab_dir) / "vocab.txt" if storage.is_dir(vocab_dir) else Path(vocab_dir)
        storage.copy_file(source, out_dir / VOCAB_COPY)
        write_json(out_dir / MANIFEST, manifest)
        run.commit(files=[VOCAB_COPY, MANIFEST])
    return manifest


@dataclass(frozen=True)
class ShardPlan:
    """What a shard run reads and is (before anything is written): the pairs, their objective, the files of
    each split with their rows, the masking vocab and the output's identity."""

    pairs_dir: Path
    pairs_artifact: dict
    pairs_stats: dict
    spec: Objective
    inputs: dict[str, list[tuple[Path, int]]]
    max_seq_length: int
    mask_vocab: MaskVocab
    identity: dict


def plan_inputs(pairs_dir: Path, vocab_dir: Path, vocab: VocabInfo, options: ShardOptions) -> ShardPlan:
    """Check the pairs (complete, their stats.json unchanged, built with this vocab) and plan the run."""
    if not storage.is_dir(pairs_dir):
        raise InputError(f"{storage.url(pairs_dir)}: no such pairs directory (run `corpusprep build-pairs` "
                         "first)")
    # complete: every file there with its size; stats.json unchanged too (each pairs file is checked by the
    # task that reads it, in parallel)
    pairs_artifact = manifests.require(pairs_dir, "pairs", checksums=["stats.json"])
    pairs_stats = load_record(pairs_dir / "stats.json", "pairs_stats")
    spec = pairs_objective(pairs_stats)
    inputs = find_inputs(pairs_dir, pairs_artifact["files"], spec)
    pairs_vocab = pairs_stats.get("vocab", {}).get("sha256")
    if pairs_vocab not in (None, vocab.sha256):
        raise UsageError(f"{vocab_dir}: not the vocab {pairs_dir} was tokenized with (sha256 differs)")
    max_seq_length = resolve_max_seq_length(options, pairs_stats)
    # Chinese whole words need a segmenter (BERT tokenizes CJK character by character): fail now if missing.
    chinese_words = (mask_strategy(options.mask_strategy).whole_words
                     and pairs_stats.get("options", {}).get("language") == "zh")
    mask_vocab = MaskVocab.from_vocab(vocab, "jieba" if chinese_words else None)
    identity = {
        "schema_version": SCHEMA_VERSION,
        "spill_format": SPILL_FORMAT,
        "objective": spec.name,
        "options": asdict(options),
        "max_seq_length": max_seq_length,
        "vocab_sha256": vocab.sha256,
        "pairs": manifests.content_digest(pairs_dir),
        **({"word_segmenter": f"jieba {_version('jieba')}"} if chinese_words else {}),
    }
    return ShardPlan(pairs_dir, pairs_artifact, pairs_stats, spec, inputs, max_seq_length, mask_vocab,
                     identity)


def mask_tasks(plan: ShardPlan, work: Path, examples: dict[str, list[int]], num_shards: dict[str, int],
               dupes: dict[str, int], options: ShardOptions) -> list[Task]:
    """Pass 1: a task per pairs file, with the examples it gives each shard (`plan_split`)."""
    tasks = []
    for split, files in plan.inputs.items():
        counts = plan_split(examples[split], num_shards[split], rng_for(options.seed, "plan", split))
        for (path, _), shard_counts_ in zip(files, counts, strict=True):
            out = work / "masked" / split / f"{path.stem}.spill"
            sha256 = plan.pairs_artifact["files"][f"{split}/{path.name}"]["sha256"]
            args = MaskTask(split, str(path), str(out), shard_counts_, dupes[split], options, plan.mask_vocab,
                            plan.max_seq_length, plan.spec.name, sha256)
            tasks.append(Task(f"mask-{split}-{path.stem}", args))
    return tasks


def shard_tasks(
    plan: ShardPlan, out_dir: Path, masks: list[Task], masked: list[dict], num_shards: dict[str, int],
    vocab: VocabInfo, options: ShardOptions,
) -> list[Task]:
    """Pass 2: a task per shard, gathering its groups from every spill file of its split."""
    tasks = []
    for split in plan.inputs:
        mine = [(t.args.out, st) for t, st in zip(masks, masked, strict=True) if t.args.split == split]
        for index in range(num_shards[split]):
            groups = tuple((out, entry) for out, st in mine for entry in st["groups"][index])
            args = ShardTask(split, index, groups, str(out_dir / split / shard_name(index)), options,
                             str(vocab.token_dtype), vocab.pad_id, vocab.cls_id, plan.spec.name)
            name = f"{split}/{shard_name(index)}"
            tasks.append(Task(f"shard-{split}-{index:05d}", args, outputs=(name,)))
    return tasks


def shards_manifest(plan: ShardPlan, run: StageRun, shards: list[Task], written: list[dict],
                    masked: list[dict], vocab: VocabInfo, vocab_dir: Path, options: ShardOptions) -> dict:
    """manifest.json: what the shards are, what they were made from, and their counts."""
    splits, files, keys = {}, run.outputs(), count_keys(plan.spec.name)
    for split in plan.inputs:
        mine = [s for t, s in zip(shards, written, strict=True) if t.args.split == split]
        splits[split] = {
            "shards": [shard_entry(s, files[s["path"]]) for s in mine],
            **{k: sum(s[k] for s in mine) for k in keys},
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "created_by": f"corpusprep {__version__}",
        "fingerprint": run.artifact.fingerprint,
        "objective": plan.spec.name,
        "options": asdict(options),
        "word_segmenter": plan.mask_vocab.segmenter,  # None or "jieba": for MaskVocab.from_vocab
        "seed": options.seed,
        "max_seq_length": plan.max_seq_length,
        "token_dtype": str(vocab.token_dtype),
        "vocab": {
            "path": storage.url(storage.resolve(vocab_dir)),
            "sha256": vocab.sha256,
            "size": vocab.size,
            "special_ids": {token: vocab.ids[token] for token in SPECIAL_TOKENS},
        },
        "pairs": {"path": storage.url(storage.resolve(plan.pairs_dir)),
                  "files": {s: [[p.name, storage.stat(p).st_size, n] for p, n in files_]
                            for s, files_ in plan.inputs.items()}},
        "pairs_stats": plan.pairs_stats,
        "mask_decisions": {k: sum(stats[k] for stats in masked) for k in ACTIONS},
        "splits": splits,
        "totals": {k: sum(s[k] for s in splits.values()) for k in keys},
    }
