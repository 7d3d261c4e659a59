"""`corpusprep validate`: recompute checksums and check every invariant of a shards directory.

Each problem is one line naming the shard (and the first bad row); an empty list means the directory is
complete and valid. The pipeline runner uses it to decide whether a stage's output can be reused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpusprep.engine import records
from corpusprep.engine.manifest import MANIFEST as ARTIFACT_MANIFEST
from corpusprep.engine.manifest import problems as artifact_problems
from corpusprep.engine.manifest import read_manifest, sha256_file
from corpusprep.engine.records import inside, load_record
from corpusprep.errors import CorpusprepError, DataError, InputError, UsageError, plural
from corpusprep.mask import num_predictions, strategies
from corpusprep.mask.examples import list_parts
from corpusprep.objectives import objective as objective_spec
from corpusprep.shard.build import MANIFEST
from corpusprep.shard.schema import SCHEMA_VERSION, SPLITS, shard_schema
from corpusprep.shard.table import count_keys, count_table, gather_predicted
from corpusprep.tokenize import read_vocab_txt


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
    if not path.is_file():
        raise InputError(f"{path}: missing (not a finished shards directory)")
    manifest = load_record(path, "shards_manifest")
    keys = count_keys(manifest.get("objective"))
    for where, counts in (("totals", manifest["totals"]),
                          *((f"splits.{n}", s) for n, s in manifest["splits"].items())):  # fmt: skip
        missing = [k for k in keys if not isinstance(counts.get(k), int)]
        if missing:
            raise DataError(f"{path}: {where}.{missing[0]}: missing (shards of objective "
                            f"{objective_spec(manifest.get('objective')).name} count {', '.join(keys)})")
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
    try:  # every shard a manifest names lies inside the directory (records.inside): nothing else is read
        for split in splits.values():
            for entry in split["shards"]:
                inside(directory, entry["path"])
    except DataError as error:
        return [str(error)]
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
    problems += [p for p in artifact_problems(directory, checksums=True) if p.split(": ")[0] not in checked]
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
    from corpusprep.tokenize import VocabInfo

    try:
        info = VocabInfo.load(directory)
        info.tokenizer()
    except (CorpusprepError, OSError, ValueError) as error:
        return [str(error)], ""
    try:
        load_record(directory / "vocab_report.json", "vocab_report")
        problems = []
    except (OSError, DataError) as error:
        problems = [_relative(str(error), directory)]
    problems += _owned_problems(directory, problems)
    return problems, f"{plural(info.size, 'token')}, sha256 {info.sha256[:12]}"


ARTIFACT_KINDS = {"vocab": "vocab directory", "pairs": "pairs directory", "shards": "shards directory",
                  "train": "trainer run directory", "evaluate": "evaluation directory"}


def _owned_problems(directory: Path, reported: list[str]) -> list[str]:
    """Files the artifact manifest lists that are missing or changed, unless `reported` names them already;
    a missing manifest is itself a problem: the stages that read a vocab or pairs refuse the directory."""
    if not (directory / ARTIFACT_MANIFEST).exists():
        return [f"{ARTIFACT_MANIFEST}: missing, so build-pairs and shard refuse this directory (not a "
                "finished corpusprep output); build it again in a new directory"]
    named = {line.split(":")[0] for line in reported}
    found = [str(Path(p).relative_to(directory)) if p.startswith(str(directory)) else p
             for p in artifact_problems(directory, checksums=True)]
    return [line for line in found if line.split(":")[0] not in named]


def _validate_pairs(directory: Path) -> tuple[list[str], str]:
    from corpusprep.pair.schema import SPLITS as PAIR_SPLITS

    try:
        stats = load_record(directory / "stats.json", "pairs_stats")
    except (OSError, DataError) as error:
        return [_relative(str(error), directory)], ""
    missing = [split for split in PAIR_SPLITS if split not in stats["splits"]]
    if missing:
        return [f"stats.json: splits.{missing[0]}: missing"], ""
    expected = {split: stats["splits"][split]["pairs"] for split in PAIR_SPLITS}
    unit = "row" if objective_spec(stats.get("objective")).packs else "pair"
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


def _relative(message: str, directory: Path) -> str:
    """A problem line naming a file of `directory` by its path relative to it."""
    prefix = f"{directory}/"
    return message[len(prefix):] if message.startswith(prefix) else message


CHECKPOINT_FILES = (records.CHECKPOINT_WEIGHTS, records.CHECKPOINT_TENSORS, records.CHECKPOINT_STATE,
                    records.CHECKPOINT_CONFIG)  # fmt: skip


def _validate_checkpoint(step: Path, training: bool = True) -> list[str]:
    """A checkpoint read as the trainer, export and --init-from read it (trainer/checkpoint.py), without
    torch: config.json and trainer.json by their loaders, each tensor file's header, and every file against
    the size and sha256 config.json records. `training`: a run's step-N (its trainer state too), not a model
    checkpoint (an import's). A checkpoint of the earlier, pickled format is invalid: nothing loads it."""
    name = f"{step.name}/" if training else ""
    if found := [n for n in records.PICKLED_CHECKPOINT if (step / n).exists()]:
        return [f"{name}{found[0]}: a checkpoint in the earlier pickled format, which corpusprep no longer "
                "loads (unpickling a file can run code)"]  # fmt: skip
    wanted = CHECKPOINT_FILES[:-1] if training else CHECKPOINT_FILES[:1]
    if missing := [f for f in (*wanted, records.CHECKPOINT_CONFIG) if not (step / f).is_file()]:
        return [f"{name}{f}: missing" for f in missing]
    try:
        config = load_record(step / records.CHECKPOINT_CONFIG, "checkpoint_config")
        for file in wanted:
            entry = config.get("files", {}).get(file)
            if entry is None:
                raise DataError(f"{step / records.CHECKPOINT_CONFIG}: files: no record of {file}")
            path = step / file
            same = path.is_file() and path.stat().st_size == entry["size"]
            if not same or sha256_file(path) != entry["sha256"]:
                raise DataError(f"{path}: missing, or not the file config.json records (size, sha256)")
        tensors = {f: records.safetensors_header(step / f) for f in wanted if f.endswith(".safetensors")}
        weights = tensors[records.CHECKPOINT_WEIGHTS]
        if bad := [t for t, (dtype, _) in weights.items() if dtype not in records.FLOAT_DTYPES]:
            raise DataError(f"{step / records.CHECKPOINT_WEIGHTS}: {json.dumps(bad[0])}: not floating point")
        if training:
            _check_trainer_state(step, tensors[records.CHECKPOINT_TENSORS])
        vocab = config.get("vocab", {})
        if vocab.get("path"):  # an import's own vocab, inside it: the one the model was trained with
            path = inside(step, vocab["path"]) / "vocab.txt"
            if vocab.get("sha256") and (not path.is_file() or sha256_file(path) != vocab["sha256"]):
                raise DataError(f"{path}: missing, or not the vocab config.json records (sha256)")
        # what only the trainer knows (the model's weights, its optimizer), by the checks its commands make:
        # imported here, as torch is, only for a checkpoint
        from trainer.checkpoint import check_checkpoint

        check_checkpoint(step)
    except (OSError, CorpusprepError) as error:
        return [f"{name}{_relative(str(error), step)}"]
    own = {*CHECKPOINT_FILES, vocab.get("path", "").split("/")[0]}
    foreign = sorted(p.name for p in step.iterdir() if p.name not in own)
    return [f"{name}{f}: not a file of a checkpoint" for f in foreign[:1]]


def _check_trainer_state(step: Path, tensors: dict) -> None:
    """trainer.json by its loader: the step of its directory, as many RNG states as positions, and every
    tensor it names held by trainer.safetensors."""
    path = step / records.CHECKPOINT_STATE
    state = load_record(path, "trainer_state")
    if step.name.startswith("step-") and state["step"] != int(step.name.removeprefix("step-") or -1):
        raise DataError(f"{path}: step: {state['step']}, not the step of {step.name}")
    if len(state["rng"]) != len(state["positions"]):
        raise DataError(f"{path}: rng: {len(state['rng'])} ranks, positions: {len(state['positions'])}")
    named = []
    stack = [state]
    while stack:
        value = stack.pop()
        if isinstance(value, dict) and set(value) == {"tensor"}:
            named.append(value["tensor"])
        elif isinstance(value, (dict, list)):
            stack.extend(value.values() if isinstance(value, dict) else value)
    if missing := sorted(set(named) - set(tensors)):
        raise DataError(f"{path}: names tensor {missing[0]!r}, not in {records.CHECKPOINT_TENSORS}")


def _validate_trainer(directory: Path) -> tuple[list[str], str]:
    found = (directory / "checkpoints").glob("step-*")
    steps = sorted(p for p in found if p.is_dir() and not p.is_symlink())
    if not steps:
        return ["checkpoints/: no checkpoint"], ""
    problems = [p for step in steps for p in _validate_checkpoint(step)]
    return problems, f"{plural(len(steps), 'checkpoint')}, newest {steps[-1].name}"


def _check_hf_sizes(config: dict, header: dict, directory: Path) -> None:
    """The sizes config.json gives against the weights' (without torch: the trainer's full check of a
    Hugging Face model, `trainer.export.check_hf_model`, builds the model's shapes): the word embeddings
    [vocab_size, hidden_size] and as many encoder layers as num_hidden_layers."""
    words = next((shape for name, (_, shape) in header.items() if name.endswith("word_embeddings.weight")),
                 None)  # fmt: skip
    layers = {int(m[1]) for name in header if (m := re.search(r"encoder\.layer\.(\d+)\.", name))}
    if words != (config["vocab_size"], config["hidden_size"]):
        raise DataError(f"{directory / 'config.json'}: vocab_size {config['vocab_size']}, hidden_size "
                        f"{config['hidden_size']}; model.safetensors' word embeddings: {list(words or [])}")
    if len(layers) != config["num_hidden_layers"] or layers != set(range(len(layers))):
        raise DataError(f"{directory / 'config.json'}: num_hidden_layers {config['num_hidden_layers']}; "
                        f"model.safetensors holds {len(layers)} encoder layers")


def _validate_export(directory: Path) -> tuple[list[str], str]:
    """A `python -m trainer.export` directory (in a pipeline run, the export of its training): the files
    from_pretrained reads, config.json readable, model.safetensors whole (its header's tensors tile the file;
    both by the records' loaders, without torch)."""
    names = ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json")
    problems = [f"{n}: missing or empty" for n in names if not (directory / n).is_file()
                or not (directory / n).stat().st_size]  # fmt: skip
    if problems:
        return problems, ""
    try:
        config = load_record(directory / "config.json", "hf_config")
        header = records.safetensors_header(directory / "model.safetensors")  # tensors tile the file exactly
        _check_hf_sizes(config, header, directory)
        read_vocab_txt(directory / "vocab.txt")
    except (OSError, DataError, UsageError) as error:
        return [_relative(str(error), directory)], ""
    return problems, f"BERT, {config.get('max_position_embeddings')} positions"


def _validate_evaluation(directory: Path) -> tuple[list[str], str]:
    """A `python -m trainer.evaluate -o` directory: evaluation.json and each run's record by their loaders,
    and every file its manifest lists unchanged."""
    checked = [(directory / "evaluation.json", "evaluation")]
    checked += [(p, "evaluate_run") for p in sorted((directory / "runs").glob("*.json"))]
    problems, result = [], None
    for path, kind in checked:
        try:
            record = load_record(path, kind)
            result = record if kind == "evaluation" else result
        except (OSError, DataError) as error:
            problems.append(_relative(str(error), directory))
    problems += _owned_problems(directory, problems)
    dev = result["splits"]["dev"] if result else None
    return problems, (f"{len(result['seeds'])} seeds, dev gain {dev['gain']['mean']:+.4f} ({dev['outcome']})"
                      if dev else "")  # fmt: skip


def _validate_run(directory: Path) -> tuple[list[str], str]:
    """A pipeline run directory: its records by their loaders, and every stage output found in it, each
    checked as what it is."""
    problems, found = [], []
    checked = [(directory / "run.json", "pipeline_run")]
    checked += [(p, "stage_done") for p in sorted((directory / "stages").glob("*.done.json"))]
    checked += [(p, "stage_started") for p in sorted((directory / "stages").glob("*.started.json"))]
    for path, kind in checked:
        try:
            load_record(path, kind)
        except (OSError, DataError) as error:
            problems.append(_relative(str(error), directory))
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
    "trainer checkpoint": lambda d: (_validate_checkpoint(d, (d / records.CHECKPOINT_STATE).is_file()),
                                     d.name),
    "pipeline run directory": _validate_run,
    "Hugging Face export": _validate_export,
    "evaluation directory": _validate_evaluation,
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
    found = read_manifest(directory)
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
    if any((directory / n).is_file() for n in (records.CHECKPOINT_WEIGHTS, *records.PICKLED_CHECKPOINT)):
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
