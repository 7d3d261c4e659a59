"""`corpusprep validate`: recompute checksums and check every invariant of a shards directory.

Each problem is one line naming the shard (and the first bad row); an empty list means the directory is
complete and valid. The pipeline runner uses it to decide whether a stage's output can be reused.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from corpusprep.engine import storage
from corpusprep.engine.manifest import problems as artifact_problems
from corpusprep.engine.manifest import sha256_file
from corpusprep.engine.outputs import validate as validate_output  # noqa: F401  (cli/shard.py imports it here)
from corpusprep.engine.records import inside, load_record
from corpusprep.errors import DataError, InputError, plural
from corpusprep.mask import num_predictions, strategies
from corpusprep.mask.examples import list_parts
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


def check_shard_rows(table: pa.Table, manifest: dict) -> list[str]:
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
    if strategies.get(strategies.resolve(options)).exact_budget:  # (token: a token always fits) the budget
        # is met unless candidates run out
        candidates = np.bincount(example[~np.isin(ids, [cls_id, sep_id, pad_id])], minlength=n)
        problems += _first(count != np.minimum(budget, candidates), "predictions != the budget")
    return problems


def load_manifest(directory: str | Path) -> dict:
    """The manifest of a finished shards directory (records kind "shards_manifest", and the counts its
    objective keeps): UsageError (exit 2) when there is none, one DataError line (exit 1) naming the field
    when it is damaged."""
    path = Path(directory) / MANIFEST
    if not storage.is_file(path):
        raise InputError(f"{storage.url(path)}: missing (not a finished shards directory)")
    manifest = load_record(path, "shards_manifest")
    keys = count_keys(manifest.get("objective"))
    for where, counts in (("totals", manifest["totals"]),
                          *((f"splits.{n}", s) for n, s in manifest["splits"].items())):
        missing = [k for k in keys if not isinstance(counts.get(k), int)]
        if missing:
            raise DataError(f"{path}: {where}.{missing[0]}: missing (shards of objective "
                            f"{objective_spec(manifest.get('objective')).name} count {', '.join(keys)})")
    return manifest


class _Layout(NamedTuple):
    """What a shards manifest says every shard holds."""

    manifest: dict
    schema: pa.Schema
    objective: str
    mask_id: int
    keys: tuple[str, ...]  # the counts of this objective (count_keys)


def validate_shards(directory: str | Path) -> list[str]:
    """Every problem found in a shards directory, one line each; [] when it is complete and valid."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    layout = _layout(directory)
    if isinstance(layout, str):
        return [layout]
    manifest, splits = layout.manifest, layout.manifest["splits"]
    try:  # every shard a manifest names lies inside the directory (records.inside): nothing else is read
        for split in splits.values():
            for entry in split["shards"]:
                inside(directory, entry["path"])
    except DataError as error:
        return [str(error)]
    problems = _unlisted(directory, splits)
    totals = dict.fromkeys(layout.keys, 0)
    for split_name, split in splits.items():
        problems += _check_split(directory, split_name, split, layout)
        for key in layout.keys:
            totals[key] += split.get(key, 0)
    problems += [f"{manifest_path}: totals.{key} is not the sum of the splits" for key in layout.keys
                 if manifest.get("totals", {}).get(key) != totals[key]]
    problems += _lost_pairs(manifest, splits)
    checked = {str(directory / s["path"]) for split in splits.values() for s in split["shards"]}
    problems += [p for p in artifact_problems(directory, checksums=True) if p.split(": ")[0] not in checked]
    return problems


def _layout(directory: Path) -> _Layout | str:
    """The manifest's promises, or the one problem that makes it unusable."""
    manifest_path = directory / MANIFEST
    if not storage.is_file(manifest_path):
        return f"{storage.url(manifest_path)}: missing (unfinished or not a shards directory)"
    try:
        manifest = load_manifest(directory)
        if manifest.get("schema_version") != SCHEMA_VERSION:
            found = manifest.get("schema_version")
            return f"{manifest_path}: schema_version {found}, this corpusprep reads {SCHEMA_VERSION}"
        objective = objective_spec(manifest.get("objective")).name
        schema = shard_schema(np.dtype(manifest["token_dtype"]), objective)
        return _Layout(manifest, schema, objective, manifest["vocab"]["special_ids"]["[MASK]"],
                       tuple(count_keys(objective)))
    except DataError as error:
        return str(error)
    except (ValueError, KeyError, TypeError) as error:
        return f"{manifest_path}: unreadable manifest ({type(error).__name__}: {error})"


def _unlisted(directory: Path, splits: dict) -> list[str]:
    """Files in the split folders the manifest does not list, and splits it should not have."""
    problems = []
    listed = {s["path"] for split in splits.values() for s in split["shards"]}
    for split in SPLITS:
        folder = directory / split
        for path in storage.list_dir(folder) if storage.is_dir(folder) else []:
            name = f"{split}/{path.name}"
            if path.name.startswith(".") and ".tmp-" in path.name:
                continue  # a killed write's: engine.manifest.problems names it, with every output's
            if name not in listed:
                problems.append(f"{name}: file not in the manifest")
    if set(splits) - set(SPLITS):
        problems.append(f"{directory / MANIFEST}: unknown splits {sorted(set(splits) - set(SPLITS))}")
    return problems


def _check_split(directory: Path, split_name: str, split: dict, layout: _Layout) -> list[str]:
    """A split's shards: balanced, each whole and valid, and holding the counts the manifest gives."""
    problems = []
    sums = dict.fromkeys(layout.keys, 0)
    rows = [s["rows"] for s in split["shards"]]
    if rows and max(rows) - min(rows) > 1:
        problems.append(f"{split_name}: unbalanced shards ({min(rows)} to {max(rows)} rows)")
    for entry in split["shards"]:
        problems += _check_shard(directory, entry, layout, sums)
    problems += [f"{split_name}: manifest {key} {split.get(key)}, the files hold {sums[key]}"
                 for key in layout.keys if sums[key] != split.get(key)]
    return problems


def _check_shard(directory: Path, entry: dict, layout: _Layout, sums: dict[str, int]) -> list[str]:
    """One shard against its manifest entry and the row invariants; its counts are added to `sums`."""
    path, name = directory / entry["path"], entry["path"]
    if not storage.is_file(path):
        return [f"{name}: missing"]
    problems = []
    size = storage.stat(path).st_size
    if size != entry["bytes"]:
        problems.append(f"{name}: {size} bytes, manifest says {entry['bytes']}")
    if sha256_file(path) != entry["sha256"]:
        problems.append(f"{name}: sha256 differs from the manifest (corrupted or replaced)")
    try:
        table = storage.read_table(path)
    except (OSError, pa.ArrowException) as error:
        return [*problems, f"{name}: unreadable Parquet ({error})"]
    if not table.schema.equals(layout.schema):
        return [*problems, f"{name}: schema differs from shard_schema({layout.manifest['token_dtype']}, "
                           f"{layout.objective})"]
    if table.num_rows != entry["rows"]:
        problems.append(f"{name}: {table.num_rows} rows, manifest says {entry['rows']}")
    problems += [f"{name} {p}" for p in check_shard_rows(table, layout.manifest)]
    for key, value in count_table(table, layout.mask_id, layout.objective).items():
        sums[key] += value
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


def validate_shards_dir(directory: Path) -> tuple[list[str], str]:
    """`corpusprep validate` of a shards directory (engine.outputs' "shards" kind): problems and summary."""
    return validate_shards(directory), _shards_summary(directory)


def _shards_summary(directory: Path) -> str:
    try:
        manifest = load_manifest(directory)
    except (DataError, InputError):
        return ""
    shards = sum(len(s["shards"]) for s in manifest["splits"].values())
    return f"{plural(manifest['totals'].get('examples', 0), 'example')} in {plural(shards, 'shard')}"
