"""`corpusprep validate` of the trainer's outputs (engine.outputs' "train", "checkpoint", "export", "import"
and "evaluate" kinds), without torch but for the last check of a checkpoint: a training run's checkpoints, a
model checkpoint, a Hugging Face export, an imported model, an evaluation directory."""

from __future__ import annotations

import json
import re
from pathlib import Path

from corpusprep.engine import storage
from corpusprep.engine.lock import LOCK_NAME
from corpusprep.engine.manifest import MANIFEST, RUN_RECORD, sha256_file
from corpusprep.engine.outputs import (
    CHECKPOINT_CONFIG,
    CHECKPOINT_STATE,
    CHECKPOINT_TENSORS,
    CHECKPOINT_WEIGHTS,
    PICKLED_CHECKPOINT,
)
from corpusprep.engine.records import inside, load_record
from corpusprep.engine.safetensors_file import FLOAT_DTYPES, safetensors_header
from corpusprep.errors import CorpusprepError, DataError, UsageError, plural
from corpusprep.tokenize import read_vocab_txt
from corpusprep.validate import owned_problems, relative

# trainer.hf_families' model types and titles, without importing it (torch); a test keeps them equal
FAMILY_TITLES = {"bert": "BERT", "megatron-bert": "Megatron-BERT", "modernbert": "ModernBERT"}
CHECKPOINT_FILES = (CHECKPOINT_WEIGHTS, CHECKPOINT_TENSORS, CHECKPOINT_STATE,
                    CHECKPOINT_CONFIG)


def check_checkpoint_files(step: Path, training: bool = True) -> list[str]:
    """A checkpoint read as the trainer, export and --init-from read it (trainer/checkpoint.py), without
    torch: config.json and trainer.json by their loaders, each tensor file's header, and every file against
    the size and sha256 config.json records. `training`: a run's step-N (its trainer state too), not a model
    checkpoint (an import's). A checkpoint of the earlier, pickled format is invalid: nothing loads it."""
    name = f"{step.name}/" if training else ""
    if found := [n for n in PICKLED_CHECKPOINT if storage.exists(step / n)]:
        return [f"{name}{found[0]}: a checkpoint in the earlier pickled format, which corpusprep no longer "
                "loads (unpickling a file can run code)"]
    wanted = CHECKPOINT_FILES[:-1] if training else CHECKPOINT_FILES[:1]
    if missing := [f for f in (*wanted, CHECKPOINT_CONFIG) if not storage.is_file(step / f)]:
        return [f"{name}{f}: missing" for f in missing]
    try:
        config = load_record(step / CHECKPOINT_CONFIG, "checkpoint_config")
        for file in wanted:
            entry = config.get("files", {}).get(file)
            if entry is None:
                raise DataError(f"{step / CHECKPOINT_CONFIG}: files: no record of {file}")
            path = step / file
            same = storage.is_file(path) and storage.stat(path).st_size == entry["size"]
            if not same or sha256_file(path) != entry["sha256"]:
                raise DataError(f"{path}: missing, or not the file config.json records (size, sha256)")
        tensors = {f: safetensors_header(step / f) for f in wanted if f.endswith(".safetensors")}
        weights = tensors[CHECKPOINT_WEIGHTS]
        if bad := [t for t, (dtype, _) in weights.items() if dtype not in FLOAT_DTYPES]:
            raise DataError(f"{step / CHECKPOINT_WEIGHTS}: {json.dumps(bad[0])}: not floating point")
        if training:
            _check_trainer_state(step, tensors[CHECKPOINT_TENSORS])
        vocab = config.get("vocab", {})
        if vocab.get("path"):  # an import's own vocab, inside it: the one the model was trained with
            path = inside(step, vocab["path"]) / "vocab.txt"
            if vocab.get("sha256") and (not storage.is_file(path) or sha256_file(path) != vocab["sha256"]):
                raise DataError(f"{path}: missing, or not the vocab config.json records (sha256)")
        # what only the trainer knows (the model's weights, its optimizer), by the checks its commands make:
        # imported here, as torch is, only for a checkpoint
        from trainer.checkpoint import check_checkpoint

        check_checkpoint(step)
    except (OSError, CorpusprepError) as error:
        return [f"{name}{relative(str(error), step)}"]
    own = {*CHECKPOINT_FILES, vocab.get("path", "").split("/")[0], MANIFEST, LOCK_NAME}  # an import's record
    foreign = sorted(p.name for p in storage.list_dir(step) if p.name not in own)
    return [f"{name}{f}: not a file of a checkpoint" for f in foreign[:1]]


def _check_trainer_state(step: Path, tensors: dict) -> None:
    """trainer.json by its loader: the step of its directory, and every tensor it names held by
    trainer.safetensors (its data position: `trainer.checkpoint_checks.data_position`)."""
    path = step / CHECKPOINT_STATE
    state = load_record(path, "trainer_state")
    if step.name.startswith("step-") and state["step"] != int(step.name.removeprefix("step-") or -1):
        raise DataError(f"{path}: step: {state['step']}, not the step of {step.name}")
    named = []
    stack = [state]
    while stack:
        value = stack.pop()
        if isinstance(value, dict) and set(value) == {"tensor"}:
            named.append(value["tensor"])
        elif isinstance(value, (dict, list)):
            stack.extend(value.values() if isinstance(value, dict) else value)
    if missing := sorted(set(named) - set(tensors)):
        raise DataError(f"{path}: names tensor {missing[0]!r}, not in {CHECKPOINT_TENSORS}")


def validate_run(directory: Path) -> tuple[list[str], str]:
    found = storage.glob(directory / "checkpoints", "step-*")
    steps = sorted(p for p in found if storage.is_dir(p) and not p.is_symlink())
    if not steps:
        return ["checkpoints/: no checkpoint"], ""
    problems = [p for step in steps for p in check_checkpoint_files(step)]
    return problems, f"{plural(len(steps), 'checkpoint')}, newest {steps[-1].name}"


def validate_checkpoint(directory: Path) -> tuple[list[str], str]:
    """A model checkpoint: a run's step-N (with its trainer state), or an import's."""
    with_state = storage.is_file(directory / CHECKPOINT_STATE)
    return check_checkpoint_files(directory, with_state), directory.name


def validate_import(directory: Path) -> tuple[list[str], str]:
    """A `python -m trainer.import_hf` output: a model checkpoint holding its vocab, and every file its
    manifest lists unchanged."""
    if unfinished := _unfinished(directory, "trainer.import_hf"):
        return unfinished, directory.name
    problems = check_checkpoint_files(directory, training=False)
    return problems + owned_problems(directory, problems), directory.name


def _unfinished(directory: Path, command: str) -> list[str]:
    """The one problem of an export or import a kill cut short (its build's record, no manifest yet)."""
    if storage.exists(directory / RUN_RECORD) and not storage.exists(directory / MANIFEST):
        return [f"{MANIFEST}: missing: an unfinished output (killed?); run {command} again to finish it"]
    return []


# Each family's word embeddings and encoder layers by name (trainer.hf_families), without importing it
# (torch): BERT and Megatron-BERT `bert.embeddings.word_embeddings`, `bert.encoder.layer.N.`; ModernBERT
# `model.embeddings.tok_embeddings`, `model.layers.N.` (a bare base model's without the `bert.`/`model.`)
WORD_EMBEDDINGS = ("word_embeddings.weight", "tok_embeddings.weight")
ENCODER_LAYER = re.compile(r"encoder\.layer\.(\d+)\.|^(?:model\.)?layers\.(\d+)\.")


def _check_hf_sizes(config: dict, header: dict, directory: Path) -> None:
    """The sizes config.json gives against the weights' (without torch: the trainer's full check of a
    Hugging Face model, `trainer.export.check_hf_model`, builds the model's shapes): the word embeddings
    [vocab_size, hidden_size] and as many encoder layers as num_hidden_layers, in each family's names."""
    words = next((shape for name, (_, shape) in header.items() if name.endswith(WORD_EMBEDDINGS)), None)
    layers = {int(m[1] or m[2]) for name in header if (m := ENCODER_LAYER.search(name))}
    if words != (config["vocab_size"], config["hidden_size"]):
        raise DataError(f"{directory / 'config.json'}: vocab_size {config['vocab_size']}, hidden_size "
                        f"{config['hidden_size']}; model.safetensors' word embeddings: {list(words or [])}")
    if len(layers) != config["num_hidden_layers"] or layers != set(range(len(layers))):
        raise DataError(f"{directory / 'config.json'}: num_hidden_layers {config['num_hidden_layers']}; "
                        f"model.safetensors holds {len(layers)} encoder layers")


def validate_export(directory: Path) -> tuple[list[str], str]:
    """A `python -m trainer.export` directory (in a pipeline run, the export of its training): the files
    from_pretrained reads, config.json readable, model.safetensors whole (its header's tensors tile the file;
    both by the records' loaders, without torch)."""
    if unfinished := _unfinished(directory, "trainer.export"):  # what is missing: its files not yet written
        return unfinished, ""
    names = ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json")
    problems = [f"{n}: missing or empty" for n in names if not storage.is_file(directory / n)
                or not storage.stat(directory / n).st_size]
    if problems:
        return problems, ""
    try:
        config = load_record(directory / "config.json", "hf_config")
        header = safetensors_header(directory / "model.safetensors")  # tensors tile the file exactly
        _check_hf_sizes(config, header, directory)
        read_vocab_txt(directory / "vocab.txt")
    except (OSError, DataError, UsageError) as error:
        return [relative(str(error), directory)], ""
    if storage.exists(directory / MANIFEST):  # ours (any BERT is checked, only ours has a manifest)
        problems += owned_problems(directory, problems)
    family = FAMILY_TITLES.get(config.get("model_type", "bert"), "BERT")
    positions = config.get("max_position_embeddings")
    return problems, f"{family}, {positions} positions" if positions else family


def validate_evaluation(directory: Path) -> tuple[list[str], str]:
    """A `python -m trainer.evaluate -o` directory: evaluation.json and each run's record by their loaders,
    and every file its manifest lists unchanged."""
    checked = [(directory / "evaluation.json", "evaluation")]
    checked += [(p, "evaluate_run") for p in storage.glob(directory / "runs", "*.json")]
    problems, result = [], None
    for path, kind in checked:
        try:
            record = load_record(path, kind)
            result = record if kind == "evaluation" else result
        except (OSError, DataError) as error:
            problems.append(relative(str(error), directory))
    problems += owned_problems(directory, problems)
    dev = result["splits"]["dev"] if result else None
    return problems, (f"{len(result['seeds'])} seeds, dev gain {dev['gain']['mean']:+.4f} ({dev['outcome']})"
                      if dev else "")
