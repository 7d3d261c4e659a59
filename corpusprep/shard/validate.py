"""`corpusprep validate`: recompute checksums and check every invariant of a shards directory.

Each problem is one line naming the shard (and the first bad row); an empty list means the directory is
complete and valid. The pipeline runner uses it to decide whether a stage's output can be reused.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpusprep.engine import artifact
from corpusprep.engine.artifact import sha256_file
from corpusprep.engine.files import read_json
from corpusprep.errors import DataError, InputError, plural
from corpusprep.mask import num_predictions
from corpusprep.mask.examples import list_parts
from corpusprep.objectives import OBJECTIVES
from corpusprep.objectives import objective as objective_spec
from corpusprep.shard.build import MANIFEST
from corpusprep.shard.schema import SCHEMA_VERSION, SPLITS, shard_schema
from corpusprep.shard.table import count_keys, count_table, gather_predicted


def _first(bad: np.ndarray, what: str) -> list[str]:
    """One problem line for a per-row check: the first bad row and how many rows fail."""
    rows = np.flatnonzero(bad)
    return [f"row {rows[0]}: {what} ({len(rows)} rows)"] if len(rows) else []


def _any(flags: np.ndarray, row_of: np.ndarray, n: int) -> np.ndarray:
    """Per row: does any of its flat elements (tokens or predictions) have the flag?"""
    return np.bincount(row_of[flags], minlength=n) > 0


def mask_strategy(options: dict) -> str:
    """The masking strategy of a manifest's options (manifests before strategies: `whole_word_mask`)."""
    return options.get("mask_strategy") or ("whole-word" if options.get("whole_word_mask") else "token")


def _pair_layout(ids, types, offsets, example, ids_of) -> list[str]:
    """[CLS] A [SEP] B [SEP], token types 0...0 1...1, specials exactly there and nowhere else."""
    cls_id, sep_id, pad_id = ids_of
    n, lengths, starts = len(offsets) - 1, np.diff(offsets), offsets[:-1]
    ones = np.add.reduceat(types.astype(np.int64), starts) if n else np.zeros(0, np.int64)
    sep_a = offsets[1:] - ones - 1  # the [SEP] that ends A
    problems = _first(lengths < 5, "shorter than [CLS] a [SEP] b [SEP]")
    problems += _first(_any(types > 1, example, n), "token_type_ids not 0/1")
    problems += _first((ones < 2) | (lengths - ones < 3), "segment A or B empty (token_type_ids)")
    if problems:
        return problems
    expect_types = (np.arange(len(ids)) > sep_a[example]).astype(np.uint8)
    problems += _first(_any(types != expect_types, example, n), "token_type_ids not 0...0 1...1")
    problems += _first(ids[starts] != cls_id, "does not start with [CLS]")
    problems += _first((ids[sep_a] != sep_id) | (ids[offsets[1:] - 1] != sep_id), "no [SEP] after A or B")
    specials = np.isin(ids, [cls_id, sep_id, pad_id])
    problems += _first(np.bincount(example[specials], minlength=n) != 3, "[CLS]/[SEP]/[PAD] inside a segment")
    return problems


def _piece_layout(table: pa.Table, ids, types, offsets, example, ids_of) -> list[str]:
    """`[CLS] p1 [SEP] [CLS] p2 [SEP] ...`: document_starts at 0 and ascending, a [CLS] at each, a [SEP]
    before each next start and at the end, every piece holding a token, no other specials; types all 0."""
    cls_id, sep_id, pad_id = ids_of
    n, lengths = len(offsets) - 1, np.diff(offsets)
    start_offsets, starts = list_parts(table.column("document_starts"))
    pieces = np.diff(start_offsets)
    starts = starts.astype(np.int64)
    problems = _first(_any(types != 0, example, n), "token_type_ids not all 0 (rows of pieces)")
    problems += _first(pieces == 0, "document_starts empty")
    if problems:
        return problems
    row = np.repeat(np.arange(n), pieces)
    first = start_offsets[:-1]
    # Each piece's end (exclusive): the next piece's start, or the row's end.
    end = np.r_[starts[1:], 0]
    last = start_offsets[1:] - 1
    end[last] = lengths
    problems += _first(starts[first] != 0, "document_starts does not begin at 0")
    problems += _first(_any(end - starts < 3, row, n), "document_starts not ascending by 3 or more")
    if problems:
        return problems
    at = offsets[row] + starts
    problems += _first(_any(ids[at] != cls_id, row, n), "no [CLS] at a document_start")
    problems += _first(_any(ids[at - starts + end - 1] != sep_id, row, n), "no [SEP] at the end of a piece")
    specials = np.isin(ids, [cls_id, sep_id, pad_id])
    problems += _first(np.bincount(example[specials], minlength=n) != 2 * pieces,
                       "[CLS]/[SEP]/[PAD] inside a piece")
    return problems


def check_rows(table: pa.Table, manifest: dict) -> list[str]:
    """Row invariants, vectorised over a whole shard."""
    special = manifest["vocab"]["special_ids"]
    cls_id, sep_id, pad_id, mask_id = (special[t] for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]"))
    spec = objective_spec(manifest.get("objective"))
    options, max_len = manifest["options"], manifest["max_seq_length"]
    offsets, ids = list_parts(table.column("input_ids"))
    type_offsets, types = list_parts(table.column("token_type_ids"))
    pred_offsets, positions = list_parts(table.column("masked_lm_positions"))
    label_offsets, labels = list_parts(table.column("masked_lm_ids"))
    lengths, num_tokens = np.diff(offsets), table.column("num_tokens").to_numpy().astype(np.int64)
    n = table.num_rows
    problems = _first(num_tokens != lengths, "num_tokens != len(input_ids)")
    problems += _first(lengths > max_len, f"longer than max_seq_length {max_len}")
    if not spec.packs:
        label = table.column(spec.shard_label).to_numpy()
        problems += _first(label > 1, f"{spec.shard_label} not 0 or 1")
    problems += _first(np.diff(type_offsets) != lengths, "len(token_type_ids) != len(input_ids)")
    problems += _first(np.diff(label_offsets) != np.diff(pred_offsets), "masked_lm_ids/_positions lengths")
    if problems:  # the layout checks below index by these lengths
        return problems

    example = np.repeat(np.arange(n), lengths)
    starts = offsets[:-1]
    ids_of = (cls_id, sep_id, pad_id)
    if spec.packs:
        problems += _piece_layout(table, ids, types, offsets, example, ids_of)
    else:
        problems += _pair_layout(ids, types, offsets, example, ids_of)
    if problems:
        return problems

    # Predictions: ascending positions inside the example, never on a special, within the budget.
    count = np.diff(pred_offsets)
    pred_example = np.repeat(np.arange(n), count)
    pos = positions.astype(np.int64)
    problems += _first(_any(pos >= lengths[pred_example], pred_example, n), "masked position out of range")
    if problems:
        return problems
    step_ok = np.ones(len(pos), bool)
    step_ok[1:] = (pos[1:] > pos[:-1]) | (pred_example[1:] != pred_example[:-1])
    problems += _first(_any(~step_ok, pred_example, n), "masked positions not ascending")
    shown, _, _, flat = gather_predicted(table)
    on_special = np.isin(ids[flat] if len(flat) else flat, [cls_id, sep_id]) | (flat == starts[pred_example])
    problems += _first(_any(on_special, pred_example, n), "a [CLS]/[SEP] is masked")
    special_label = np.isin(labels, [cls_id, sep_id, pad_id, mask_id])
    problems += _first(_any(special_label, pred_example, n), "a label is a special token")
    bad_random = (shown != mask_id) & (shown != labels) & np.isin(shown, list(special.values()))
    problems += _first(_any(bad_random, pred_example, n), "a random replacement is a special token")
    budget = num_predictions(lengths, options["masked_lm_prob"], options["max_predictions_per_seq"])
    problems += _first(count > budget, "more predictions than the budget")
    if mask_strategy(options) == "token":  # a token always fits: the budget is met unless candidates run out
        candidates = np.bincount(example[~np.isin(ids, [cls_id, sep_id, pad_id])], minlength=n)
        problems += _first(count != np.minimum(budget, candidates), "predictions != the budget")
    return problems


def manifest_problems(manifest: object) -> list[str]:
    """What makes a parsed manifest.json unusable (valid JSON of the wrong shape): [] when every field the
    readers use is there with its type."""
    if not isinstance(manifest, dict):
        return [f"not a JSON object but {type(manifest).__name__}"]
    problems = []
    expected = {"schema_version": int, "max_seq_length": int, "token_dtype": str, "options": dict,
                "vocab": dict, "splits": dict, "totals": dict}
    for key, kind in expected.items():
        if not isinstance(manifest.get(key), kind):
            problems.append(f"{key} missing or not {'an object' if kind is dict else kind.__name__}")
    vocab = manifest.get("vocab")
    if isinstance(vocab, dict):
        if not isinstance(vocab.get("special_ids"), dict):
            problems.append("vocab.special_ids missing")
        problems += [f"vocab.{k} missing" for k in ("path", "sha256") if not isinstance(vocab.get(k), str)]
    name = manifest.get("objective")
    if name is not None and name not in OBJECTIVES:
        problems.append(f"objective {name!r} unknown (known: {', '.join(OBJECTIVES)})")
        name = None
    keys = count_keys(name)
    totals = manifest.get("totals")
    if isinstance(totals, dict) and not all(isinstance(totals.get(k), int) for k in keys):
        problems.append(f"totals lacks a count of {', '.join(keys)}")
    splits = manifest.get("splits") if isinstance(manifest.get("splits"), dict) else {}
    for name, split in splits.items():
        shards = split.get("shards") if isinstance(split, dict) else None
        entries_ok = isinstance(shards, list) and all(
            isinstance(e, dict) and {"path", "rows", "bytes", "sha256"} <= set(e) for e in shards
        )
        if not entries_ok:
            problems.append(f"splits.{name}.shards is not a list of {{path, rows, bytes, sha256}}")
    return problems


def load_manifest(directory: str | Path) -> dict:
    """The manifest of a finished shards directory, its shape checked: UsageError (exit 2) when there is
    none, DataError (exit 1) when it is not JSON or not a manifest."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise InputError(f"{path}: missing (not a finished shards directory)")
    try:
        manifest = read_json(path)
    except (ValueError, UnicodeDecodeError) as error:
        raise DataError(f"{path}: not JSON ({error})") from None
    problems = manifest_problems(manifest)
    if problems:
        raise DataError(f"{path}: not a shards manifest ({'; '.join(problems[:3])})")
    return manifest


def validate_shards(directory: str | Path) -> list[str]:
    """Every problem found in a shards directory, one line each; [] when it is complete and valid."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        return [f"{manifest_path}: missing (unfinished or not a shards directory)"]
    try:
        manifest = load_manifest(directory)
        splits = manifest["splits"]
        if manifest.get("schema_version") != SCHEMA_VERSION:
            found = manifest.get("schema_version")
            return [f"{manifest_path}: schema_version {found}, this corpusprep reads {SCHEMA_VERSION}"]
        objective = objective_spec(manifest.get("objective")).name
        schema = shard_schema(np.dtype(manifest["token_dtype"]), objective)
        mask_id = manifest["vocab"]["special_ids"]["[MASK]"]
        keys = count_keys(objective)
    except DataError as error:
        return [str(error)]
    except (ValueError, KeyError, TypeError) as error:
        return [f"{manifest_path}: unreadable manifest ({type(error).__name__}: {error})"]

    problems: list[str] = []
    listed = {s["path"] for split in splits.values() for s in split["shards"]}
    for split in SPLITS:
        folder = directory / split
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            name = f"{split}/{path.name}"
            if path.name.startswith(".") and ".tmp-" in path.name:
                problems.append(f"{name}: leftover temporary file of an interrupted write")
            elif name not in listed:
                problems.append(f"{name}: file not in the manifest")
    if set(splits) - set(SPLITS):
        problems.append(f"{manifest_path}: unknown splits {sorted(set(splits) - set(SPLITS))}")

    totals = dict.fromkeys(keys, 0)
    for split_name, split in splits.items():
        sums = dict.fromkeys(keys, 0)
        rows = [s["rows"] for s in split["shards"]]
        if rows and max(rows) - min(rows) > 1:
            problems.append(f"{split_name}: unbalanced shards ({min(rows)} to {max(rows)} rows)")
        for entry in split["shards"]:
            path, name = directory / entry["path"], entry["path"]
            if not path.is_file():
                problems.append(f"{name}: missing")
                continue
            if path.stat().st_size != entry["bytes"]:
                problems.append(f"{name}: {path.stat().st_size} bytes, manifest says {entry['bytes']}")
            if sha256_file(path) != entry["sha256"]:
                problems.append(f"{name}: sha256 differs from the manifest (corrupted or replaced)")
            try:
                table = pq.read_table(path)
            except (OSError, pa.ArrowException) as error:
                problems.append(f"{name}: unreadable Parquet ({error})")
                continue
            if not table.schema.equals(schema):
                problems.append(f"{name}: schema differs from shard_schema({manifest['token_dtype']}, "
                                f"{objective})")
                continue
            if table.num_rows != entry["rows"]:
                problems.append(f"{name}: {table.num_rows} rows, manifest says {entry['rows']}")
            problems += [f"{name} {p}" for p in check_rows(table, manifest)]
            for key, value in count_table(table, mask_id, objective).items():
                sums[key] += value
        for key in keys:
            totals[key] += split.get(key, 0)
            if sums[key] != split.get(key):
                problems.append(f"{split_name}: manifest {key} {split.get(key)}, the files hold {sums[key]}")
    for key in keys:
        if manifest.get("totals", {}).get(key) != totals[key]:
            problems.append(f"{manifest_path}: totals.{key} is not the sum of the splits")
    problems += _lost_pairs(manifest, splits)
    checked = {str(directory / s["path"]) for split in splits.values() for s in split["shards"]}
    problems += [p for p in artifact.problems(directory, checksums=True) if p.split(": ")[0] not in checked]
    return problems


def _lost_pairs(manifest: dict, splits: dict) -> list[str]:
    """Every pair of the pairs stats became an example (dupe_masks of them for training): none was lost."""
    pairs_splits = manifest.get("pairs_stats", {}).get("splits", {})
    dupes = manifest.get("options", {}).get("dupe_masks", 1)
    found = []
    for name, split in splits.items():
        counted = pairs_splits.get(name, {})
        pairs = counted.get("pairs", counted.get("rows"))  # rows of pieces (none) may be counted as rows
        want = None if pairs is None else pairs * (dupes if name == "train" else 1)
        if want is not None and split.get("examples") != want:
            found.append(f"{name}: {split.get('examples')} examples, the pairs' stats.json promises {want}")
    return found


# --- any corpusprep output ---------------------------------------------------------------------------------


def _validate_vocab(directory: Path) -> tuple[list[str], str]:
    from corpusprep.errors import CorpusprepError
    from corpusprep.tokenize import VocabInfo

    try:
        info = VocabInfo.load(directory)
        info.tokenizer()
    except (CorpusprepError, OSError, ValueError) as error:
        return [str(error)], ""
    problems = [] if (directory / "vocab_report.json").is_file() else ["vocab_report.json: missing"]
    problems += _owned_problems(directory, problems)
    return problems, f"{plural(info.size, 'token')}, sha256 {info.sha256[:12]}"


ARTIFACT_KINDS = {"vocab": "vocab directory", "pairs": "pairs directory", "shards": "shards directory",
                  "train": "trainer run directory"}


def _owned_problems(directory: Path, reported: list[str]) -> list[str]:
    """Files the artifact manifest lists that are missing or changed, unless `reported` names them already;
    a missing manifest is itself a problem: the stages that read a vocab or pairs refuse the directory."""
    if not (directory / artifact.MANIFEST).exists():
        return [f"{artifact.MANIFEST}: missing, so build-pairs and shard refuse this directory (not a "
                "finished corpusprep output); build it again in a new directory"]
    named = {line.split(":")[0] for line in reported}
    found = [str(Path(p).relative_to(directory)) if p.startswith(str(directory)) else p
             for p in artifact.problems(directory, checksums=True)]
    return [line for line in found if line.split(":")[0] not in named]


def _validate_pairs(directory: Path) -> tuple[list[str], str]:
    from corpusprep.pair.schema import SPLITS as PAIR_SPLITS

    try:
        stats = read_json(directory / "stats.json")
        expected = {split: stats["splits"][split]["pairs"] for split in PAIR_SPLITS}
        spec = OBJECTIVES.get(stats.get("objective") or "nsp")
        unit = "row" if spec is not None and spec.packs else "pair"
    except (OSError, ValueError, KeyError, TypeError) as error:
        return [f"stats.json: unreadable ({type(error).__name__}: {error})"], ""
    problems, files = [], 0
    for split in PAIR_SPLITS:
        rows = 0
        for path in sorted((directory / split).glob("*.parquet")):
            files += 1
            try:
                rows += pq.ParquetFile(path).metadata.num_rows
            except (OSError, pa.ArrowException) as error:
                problems.append(f"{split}/{path.name}: unreadable Parquet ({error})")
        if not problems and rows != expected[split]:
            problems.append(f"{split}: {plural(rows, unit)} in the files; stats.json: {expected[split]:,}")
    problems += _owned_problems(directory, problems)
    return problems, f"{plural(sum(expected.values()), unit)} in {plural(files, 'file')}"


def _validate_checkpoint(step: Path) -> list[str]:
    problems = [f"{step.name}/{name}: missing or empty" for name in ("model.pt", "config.json")
                if not (step / name).is_file() or (step / name).stat().st_size == 0]
    if not problems:
        try:
            read_json(step / "config.json")
        except (OSError, ValueError) as error:
            problems.append(f"{step.name}/config.json: unreadable ({error})")
    for path in sorted(step.glob("*.pt")):
        if path.stat().st_size and (problem := _torch_file_problem(path)):
            problems.append(f"{step.name}/{path.name}: {problem}")
    return problems


def _torch_file_problem(path: Path) -> str | None:
    """Why a torch.save file would not load, found without torch: torch.save writes a zip archive, whose
    directory sits at its end (a truncated file has lost it) and whose members carry CRCs (read once)."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head[:1] == b"\x80":  # the legacy pickle format (torch < 1.6): no directory or CRC to check
        return None
    if head != b"PK\x03\x04":
        return "not a torch.save file"
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        return f"damaged or truncated, would not load ({error})"
    return f"damaged: {bad} fails its checksum" if bad else None


def _validate_trainer(directory: Path) -> tuple[list[str], str]:
    steps = sorted(p for p in (directory / "checkpoints").glob("step-*") if p.is_dir())
    if not steps:
        return ["checkpoints/: no checkpoint"], ""
    problems = [p for step in steps for p in _validate_checkpoint(step)]
    return problems, f"{plural(len(steps), 'checkpoint')}, newest {steps[-1].name}"


def _validate_export(directory: Path) -> tuple[list[str], str]:
    """A `python -m trainer.export` directory (in a pipeline run, the export of its training): the files
    from_pretrained reads, config.json readable, model.safetensors whole (its header's tensors end where the
    file ends; read without torch)."""
    names = ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json")
    problems = [f"{n}: missing or empty" for n in names if not (directory / n).is_file()
                or not (directory / n).stat().st_size]  # fmt: skip
    if problems:
        return problems, ""
    try:
        config = read_json(directory / "config.json")
        weights = directory / "model.safetensors"
        with open(weights, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size)) if size < weights.stat().st_size else None
        ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
        if 8 + size + max(ends, default=0) != weights.stat().st_size:
            problems.append("model.safetensors: damaged or truncated (its tensors do not end where it ends)")
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
        return [f"config.json or model.safetensors unreadable ({error})"], ""
    return problems, f"BERT, {config.get('max_position_embeddings')} positions"


def _validate_run(directory: Path) -> tuple[list[str], str]:
    """A pipeline run directory: every stage output found in it, each checked as what it is."""
    problems, found = [], []
    for sub in sorted(p for p in directory.rglob("*") if p.is_dir() and not p.name.startswith((".", "_"))):
        kind = output_kind(sub)
        if kind and kind != "pipeline run directory" and not any(sub.is_relative_to(d) for d in found):
            found.append(sub)
            sub_problems, _ = VALIDATORS[kind](sub)
            problems += [f"{sub.relative_to(directory)}/ ({kind}): {p}" for p in sub_problems]
    return problems, f"{plural(len(found), 'stage output')} checked"


VALIDATORS = {
    "shards directory": lambda d: (validate_shards(d), _shards_summary(d)),
    "pairs directory": _validate_pairs,
    "vocab directory": _validate_vocab,
    "trainer run directory": _validate_trainer,
    "trainer checkpoint": lambda d: (_validate_checkpoint(d), d.name),
    "pipeline run directory": _validate_run,
    "Hugging Face export": _validate_export,
}


def _shards_summary(directory: Path) -> str:
    try:
        manifest = load_manifest(directory)
    except (DataError, InputError):
        return ""
    shards = sum(len(s["shards"]) for s in manifest["splits"].values())
    return f"{plural(manifest['totals'].get('examples', 0), 'example')} in {plural(shards, 'shard')}"


def output_kind(directory: Path) -> str | None:
    """Which corpusprep output a directory holds, from its artifact manifest or the files that mark each
    kind; None if none."""
    found = artifact.read_manifest(directory)
    if found is not None and found["kind"] in ARTIFACT_KINDS:
        return ARTIFACT_KINDS[found["kind"]]
    if (directory / "run.json").is_file() and (directory / "stages").is_dir():
        return "pipeline run directory"
    if (directory / MANIFEST).is_file():
        return "shards directory"
    if (directory / "model.safetensors").is_file() and (directory / "config.json").is_file():
        return "Hugging Face export"
    if (directory / "vocab.txt").is_file():
        return "vocab directory"
    if (directory / "stats.json").is_file() and any((directory / s).is_dir() for s in SPLITS):
        return "pairs directory"
    if (directory / "checkpoints").is_dir():
        return "trainer run directory"
    if (directory / "model.pt").is_file():
        return "trainer checkpoint"
    return None


def validate_output(path: str | Path) -> tuple[str, list[str], str]:
    """(kind, problems, summary) of any corpusprep output: a vocab, pairs, shards, trainer run or checkpoint,
    or pipeline run directory. UsageError (exit 2) for a path that is none of them."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such directory")
    if not path.is_dir():
        raise InputError(f"{path}: is a file; validate takes a directory corpusprep or the trainer wrote")
    kind = output_kind(path)
    if kind is None:
        raise InputError(
            f"{path}: not a corpusprep output (no manifest.json, vocab.txt, stats.json, checkpoints/...)"
        )
    problems, summary = VALIDATORS[kind](path)
    return kind, problems, summary
