"""A trainer checkpoint as a Hugging Face directory (the class of its family: trainer/hf_families.py).

    python -m trainer.export runs/demo/checkpoints/step-0000300 hf/demo [--vocab DIR] [--verify]

A BERT trained with a sentence task (objective nsp or sop) is written as `BertForPreTraining` (SOP's head
is `cls.seq_relationship`; config.json says which task it learnt, `corpusprep_objective`); one trained on
masked LM alone (`none`) as `BertForMaskedLM`, with no pooler and no sentence head, so nothing is missing.
A pre-LN BERT as `MegatronBertForPreTraining` / `MegatronBertForMaskedLM`; the `modern-*` presets as
`ModernBertForMaskedLM`; any other combination of the model's options is refused in one line, before
anything is written. OUT_DIR loads with `transformers` `AutoModelForPreTraining` (nsp, sop) /
`AutoModelForMaskedLM` / `AutoModel` / `AutoTokenizer` / `pipeline("fill-mask")` (and the Auto classes of
fine-tuning: token and sequence classification): config.json, model.safetensors, vocab.txt, tokenizer.json,
tokenizer_config.json, special_tokens_map.json; OUT_DIR is an artifact of kind "export"
(corpusprep.engine.artifact, with its artifact.json): a rerun of the same checkpoint and vocab is up
to date, another is refused until --overwrite, a killed export is finished by the next run. Writing needs
torch, safetensors and corpusprep's `tokenizers`; `--verify` (optional) imports transformers to compare
logits.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import torch

from corpusprep.console import refuse_stdout
from corpusprep.engine import faults, records, storage
from corpusprep.engine.artifact import Artifact
from corpusprep.engine.files import atomic_path
from corpusprep.engine.outputs import OUTPUT_KINDS, PIPELINE_RUN_FILES
from corpusprep.engine.placement import check_not_nested, directories_above, enclosing_output
from corpusprep.engine.safetensors_file import FLOAT_DTYPES, safetensors_header
from corpusprep.errors import DataError, UsageError
from trainer.checkpoint import WEIGHTS, find_checkpoint, load_checkpoint, write_tensors
from trainer.checkpoint_checks import check_state
from trainer.command import Command
from trainer.hf_families import config_from_hf, family_named, hf_config, hf_shapes, to_hf
from trainer.model import BertConfig, BertForPreTraining

# ---------------------------------------------------------------- configs


def trained_length(saved: dict, max_position: int) -> int | None:
    """The longest sequence the checkpoint's run trained on (its shards' max_seq_length, as its config.json
    records them), when the run started from random weights; None when unknown (an import, an older run, a
    value out of range) or when it started from other weights (checkpoint.init_from), whose positions were
    trained elsewhere, maybe further."""
    def field(record: object, key: str) -> object:  # the record is read from disk: any shape
        return record.get(key) if isinstance(record, dict) else None

    init_from = field(field(saved.get("train"), "checkpoint"), "init_from")
    length = field(saved.get("shards"), "max_seq_length")
    if init_from or not isinstance(length, int) or isinstance(length, bool):
        return None
    return length if 1 <= length <= max_position else None


EXPORT_WEIGHTS_FILE = "model.safetensors"
HF_PICKLED = ("pytorch_model.bin", "model.ckpt.index", "tf_model.h5")


def check_hf_model(hf_dir: Path) -> BertConfig:
    """Our BertConfig for a Hugging Face directory of a family we read (BERT, Megatron-BERT, ModernBERT), and
    its weights checked against it before any is read: config.json by the records loader and the family's
    reader (`hf_families.config_from_hf`; sizes by config.check_fits: a model
    this machine holds), model.safetensors' header (safetensors_header: whole, tensors tiling the
    file), every tensor floating point with the shape the config gives it, no encoder weight missing. A
    pickled pytorch_model.bin is refused, never opened. The one check of a Hugging Face model directory:
    `trainer.import_hf` and `trainer.evaluate` read one only after it."""
    config_path, weights = hf_dir / "config.json", hf_dir / EXPORT_WEIGHTS_FILE
    if not storage.is_file(config_path):
        raise UsageError(f"{hf_dir}: no config.json (not a save_pretrained directory)")
    # the records loader checks shape and types, BertConfig the sizes; both exit 1. What our model cannot
    # compute (relu, roberta): exit 2
    record = records.load_record(config_path, "hf_config")
    config = config_from_hf(record, config_path)
    family = family_named(record.get("model_type", "bert"), config_path)
    if not storage.is_file(weights):
        if any(storage.is_file(hf_dir / name) for name in HF_PICKLED):
            raise UsageError(
                f"{hf_dir}: holds pickled (or TensorFlow) weights, which are never read: loading a pickle "
                "runs the code it holds; convert them to model.safetensors first (transformers: "
                "from_pretrained(DIR).save_pretrained(DIR, safe_serialization=True), in a trusted "
                "environment)"
            )
        if storage.glob(hf_dir, "*.index.json"):
            raise UsageError(f"{hf_dir}: sharded weights are not supported; save_pretrained with "
                             "max_shard_size")
        raise UsageError(f"{hf_dir}: no model.safetensors")
    expected = hf_shapes(config)
    for name, (dtype, shape) in safetensors_header(weights).items():
        known = expected.pop(family.hf_name(name), None)
        if dtype not in FLOAT_DTYPES:
            raise DataError(f"{weights}: {json.dumps(name)}: {dtype}, not floating point")
        if known is not None and shape != known:
            raise DataError(f"{weights}: {json.dumps(name)}: shape {list(shape)}, {config_path.name} gives "
                            f"{list(known)}")
    if lost := [k for k in expected if not k.startswith(family.heads)]:
        raise DataError(f"{weights}: not a complete {family.title} checkpoint: missing {', '.join(lost[:3])}")
    return config


# ---------------------------------------------------------------- checkpoint and vocab


def find_vocab(checkpoint_dir: Path, saved: dict, explicit: Path | None, vocab_size: int) -> Path:
    """The vocab directory: --vocab; the checkpoint's own vocab/ (import_hf); else the shards' vocab
    named by the saved train config's data.shards -> manifest.json vocab.path (or vocab.txt beside it)."""
    from corpusprep.tokenize import VocabInfo

    manifest = {}
    if explicit is not None:
        candidates = [Path(explicit)]
    elif storage.is_file(checkpoint_dir / "vocab" / "vocab.txt"):
        candidates = [checkpoint_dir / "vocab"]
    else:
        shards = saved.get("train", {}).get("data", {}).get("shards")
        if not shards:
            raise UsageError(f"{checkpoint_dir}: config names no shards; pass --vocab DIR")
        manifest_path = Path(shards) / "manifest.json"
        if not storage.is_file(manifest_path):
            raise UsageError(f"{storage.url(manifest_path)}: not found (shards moved?); pass --vocab DIR")
        manifest = records.load_record(manifest_path, "shards_manifest")["vocab"]
        # the vocab directory first (its tokenizer.json travels to the export); the shards' own copy of
        # vocab.txt (all that dynamic masking needs, see data.Shards.vocab_info) when it has moved
        candidates = [Path(p) for p in (manifest.get("path"), shards) if p]
    wanted = manifest.get("sha256") or saved.get("vocab", {}).get("sha256")  # the model's vocab, when known
    for directory in candidates:
        if not storage.is_file(directory / "vocab.txt"):
            continue
        info = VocabInfo.load(directory)
        if wanted and info.sha256 != wanted:
            raise UsageError(f"{directory / 'vocab.txt'}: not the vocab the model was trained with (sha256 "
                             f"{info.sha256[:12]}..., the checkpoint's {wanted[:12]}...)")
        if info.size != vocab_size:
            raise UsageError(f"{directory / 'vocab.txt'}: {info.size} tokens, the model has {vocab_size}")
        return directory
    raise UsageError(f"no vocab.txt in {', '.join(map(str, candidates))}; pass --vocab DIR")


def tokenizer_files(vocab_dir: Path, max_length: int) -> dict[str, str]:
    """vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map.json for `AutoTokenizer`."""
    from corpusprep.tokenize import VocabInfo
    from corpusprep.tokenize.vocab import hf_tokenizer_files, tokenizer_from_tokens

    info = VocabInfo.load(vocab_dir)
    if storage.is_file(vocab_dir / "tokenizer.json"):
        tokenizer_json = storage.read_text(vocab_dir / "tokenizer.json", encoding="utf-8")
        saved = records.load_record(vocab_dir / "tokenizer.json", "tokenizer_json")
        normalizer = saved.get("normalizer") or {}
        lowercase = bool(normalizer.get("lowercase", True))
    else:  # a bare vocab.txt: BERT's uncased pipeline, as `corpusprep vocab` builds it by default
        lowercase = True
        tokenizer_json = tokenizer_from_tokens(info.tokens, cased=False).to_str()
    return {
        "vocab.txt": storage.read_text(vocab_dir / "vocab.txt", encoding="utf-8"),
        "tokenizer.json": tokenizer_json,
        **hf_tokenizer_files(cased=not lowercase, model_max_length=max_length),
    }


# ---------------------------------------------------------------- writing

# What an export writes, in this order: config.json last, so that a directory holding it holds every file
# from_pretrained reads; the artifact's manifest, written after them, marks the output complete
EXPORT_FILES = OUTPUT_KINDS["export"].owns
COMMIT = "config.json"  # what from_pretrained and find_checkpoint open first
COMMAND = "trainer.export"  # in messages
FAULT_POINT = "model_file"  # engine.faults: an export's or import's file is in place, the manifest not yet


def beside_stages(out: Path, inputs: Iterable[Path]) -> Path | None:
    """The pipeline run `out` may lie in: the one whose output the command reads, with `out` a directory of
    it beside its stages (`runs/demo/hf` from `runs/demo/train`, as the README does); else None, and the
    artifact refuses any output `out` lies in, as every command does (engine.placement)."""
    target = storage.resolve(out)
    found = enclosing_output(directories_above(out))
    if found is None or found[1] != "a pipeline run":
        return None
    pipeline = found[0]
    reads_it = any(pipeline in storage.resolve(path).parents for path in inputs)
    beside = target.parent == pipeline and target.name not in PIPELINE_RUN_FILES
    return pipeline if reads_it and beside else None


def output_artifact(out: Path, kind: str, identity: dict, inputs: list[Path], overwrite: bool,
                    command: str) -> Artifact:
    """`out` as an artifact of `kind` (engine.outputs.OUTPUT_KINDS: "export", "import"): up to date when
    built from the same identity, resumed after a kill, refused when it holds another identity's output
    (--overwrite replaces what it owns) or another command's, written beside files it does not own with
    --overwrite."""
    return Artifact(out, kind, identity, inputs=inputs, overwrite=overwrite, command=command,
                    part_of=beside_stages(out, inputs))


def write_files(art: Artifact, files: dict[str, Callable[[Path], None]]) -> None:
    """Each of `files` (relative name -> writer of it at the temporary path given), in order, renamed into
    place when whole (engine.files.atomic_path); never over a file the artifact does not own."""
    art.claim(files)
    for name, write in files.items():
        with atomic_path(records.inside(art.directory, name, write=True)) as tmp:
            write(tmp)
        faults.reached(FAULT_POINT)


def export(
    checkpoint: str | Path, out_dir: str | Path, vocab: str | Path | None = None, overwrite: bool = False
) -> Path:
    """Write the Hugging Face directory of a trainer checkpoint (or run directory's newest one)."""
    return export_dir(checkpoint, out_dir, vocab, overwrite)[0]


def export_dir(
    checkpoint: str | Path, out_dir: str | Path, vocab: str | Path | None = None, overwrite: bool = False
) -> tuple[Path, bool]:
    """(the export, True when it was up to date): everything is read and checked before the output is
    touched; the identity is what its bytes depend on (the weights, config.json, the tokenizer files)."""
    path = find_checkpoint(Path(checkpoint))
    config, state, saved = load_checkpoint(path)
    check_state(state, config, path / WEIGHTS)
    weights = to_hf(state, config)  # a model no Hugging Face class computes: refused before any write
    vocab_dir = find_vocab(path, saved, Path(vocab) if vocab else None, config.vocab_size)
    # Positions beyond the longest trained sequence hold their random initialisation: the export ends at the
    # trained length (max_position_embeddings, the position table, the tokenizer's model_max_length), so a
    # longer input is an error or truncated, never silently read with untrained positions.
    trained = trained_length(saved, config.max_position)
    if trained is not None and trained < config.max_position:
        table = "bert.embeddings.position_embeddings.weight"  # rotary positions have no table
        if table in weights:
            weights[table] = weights[table][:trained].clone()
        config = dataclasses.replace(config, max_position=trained)
    texts = tokenizer_files(vocab_dir, config.max_position)
    record = hf_config(config, texts["vocab.txt"].splitlines())
    record["corpusprep_trained_length"] = trained
    identity = {
        "checkpoint": {"name": path.name, "weights_sha256": saved["files"][WEIGHTS]["sha256"]},
        "config": record,
        "tokenizer": {name: hashlib.sha256(text.encode()).hexdigest() for name, text in texts.items()},
    }

    def save_weights(tmp: Path) -> None:
        write_tensors(weights, tmp)  # the umask's mode, as every other file (safetensors alone: 0600)

    files: dict[str, Callable[[Path], None]] = {"model.safetensors": save_weights}
    for name, text in texts.items():
        files[name] = lambda tmp, text=text: storage.write_text(tmp, text, encoding="utf-8")
    files[COMMIT] = lambda tmp: storage.write_text(tmp, json.dumps(record, indent=2) + "\n")
    assert tuple(files) == EXPORT_FILES, "the export writes what the registry says it owns"
    out = Path(out_dir)
    read = inputs(path, saved, vocab_dir)
    check_not_nested(out, read, COMMAND)  # the run dir and the shards too: read, but not locked
    with output_artifact(out, "export", identity, read[:2], overwrite, COMMAND) as art:
        if art.complete is not None:
            return out, True
        write_files(art, files)
        art.commit(files=EXPORT_FILES)
    return out, False


def inputs(path: Path, saved: dict, vocab_dir: Path) -> list[Path]:
    """What an export reads, which its output must not overlap: the checkpoint and the vocab directory
    (held with a reader's lock while it is read), its run directory and the shards that named the vocab."""
    found = [path, vocab_dir]
    if path.parent.name == "checkpoints":
        found.append(path.parent.parent)
    if shards := saved.get("train", {}).get("data", {}).get("shards"):
        found.append(Path(shards))
    return found


def our_model(config: BertConfig, state: dict[str, torch.Tensor]) -> BertForPreTraining:
    model = BertForPreTraining(config)
    model.load_state_dict(state)
    return model.eval()


def local_copy(directory: Path, scratch: Path) -> Path:
    """A Hugging Face directory where transformers' from_pretrained can read it: on a local disk itself, on
    an object store its files copied into `scratch` through the storage seam."""
    local = storage.store_for(directory).local(directory)
    if local is not None:
        return local
    for path in storage.list_dir(directory):
        if storage.is_file(path):
            storage.copy_file(path, scratch / path.name)
    return scratch


def verify(out_dir: str | Path, model: BertForPreTraining, seed: int = 0, batch: int = 4) -> dict:
    """Load OUT_DIR with transformers and compare logits with ours on a random padded batch (fp32, CPU).

    Returns missing/unexpected keys and the max |difference| of MLM logits (real positions) and sentence
    logits (0 without a sentence head).
    """
    import transformers

    head = model.config.sentence_head
    with tempfile.TemporaryDirectory(prefix="corpusprep-verify-") as scratch:  # an export on a store: a copy
        local = local_copy(Path(out_dir), Path(scratch))
        hf_class = getattr(transformers, json.loads(storage.read_text(local / COMMIT))["architectures"][0])
        hf, info = hf_class.from_pretrained(str(local), output_loading_info=True)
    hf.eval()
    model = model.eval()
    config = model.config
    g = torch.Generator().manual_seed(seed)
    # an export ends at its trained length
    length = min(config.max_position, hf.config.max_position_embeddings, 32)
    ids = torch.randint(0, config.vocab_size, (batch, length), generator=g)
    types = (torch.arange(length) >= length // 2).long().expand(batch, -1)
    lengths = torch.randint(length // 2, length + 1, (batch,), generator=g)
    lengths[0] = length
    mask = torch.arange(length)[None, :] < lengths[:, None]
    with torch.no_grad():
        ours_mlm, ours_nsp = model.padded(ids, types, mask)
        segments = {"token_type_ids": types} if config.type_vocab_size else {}  # ModernBERT has none
        theirs = hf(input_ids=ids, attention_mask=mask.long(), **segments)
    return {
        "missing_keys": sorted(info["missing_keys"]),
        "unexpected_keys": sorted(info["unexpected_keys"]),
        "mlm_max_abs_diff": float((ours_mlm - (theirs.prediction_logits if head else theirs.logits))[mask]
                                  .abs().max()),
        "nsp_max_abs_diff": float((ours_nsp - theirs.seq_relationship_logits).abs().max()) if head else None,
    }


def positions_note(out: Path) -> str:
    """What the export's max_position_embeddings means, from the config.json just written."""
    hf = json.loads(storage.read_text(Path(out) / COMMIT))
    positions, trained = hf["max_position_embeddings"], hf.get("corpusprep_trained_length")
    if trained is None:
        return (f"max_position_embeddings {positions}, the model's; the length it was trained on is not "
                "known here (initialised from other weights, or an import)")
    return f"max_position_embeddings {positions}: the longest sequence it was trained on"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", type=Path, help="checkpoint directory (step-NNNNNNN) or run directory")
    parser.add_argument("out_dir", type=Path, help="output directory for transformers' from_pretrained")
    parser.add_argument("--vocab", type=Path, help="vocab directory (default: the one the shards name)")
    parser.add_argument(
        "--overwrite", action="store_true",
        help="replace an export of another checkpoint or vocab in OUT_DIR (only its own files)",
    )
    parser.add_argument("--verify", action="store_true", help="load with transformers and compare logits")


def run(args: argparse.Namespace) -> int:
    refuse_stdout(args.out_dir, "OUT_DIR", "a directory (config.json, model.safetensors, ...)")
    if args.verify and importlib.util.find_spec("transformers") is None:  # before anything is written
        raise UsageError("--verify loads the export with transformers, which is not installed here: pip "
                         "install transformers (the export itself does not need it)")
    out, reused = export_dir(args.checkpoint, args.out_dir, args.vocab, args.overwrite)
    if reused:
        print(f"{storage.url(out)}: up to date (the same checkpoint and vocab); nothing to do")
    else:
        print(f"wrote {storage.url(out)} ({positions_note(out)})")
    if args.verify:
        config, state, _ = load_checkpoint(args.checkpoint)
        report = verify(out, our_model(config, state))
        print(json.dumps(report, indent=2))
        worst = max(report["mlm_max_abs_diff"], report["nsp_max_abs_diff"] or 0.0)
        if report["missing_keys"] or report["unexpected_keys"] or worst > 1e-4:
            raise DataError(f"{out}: transformers does not reproduce the checkpoint (see above)")
    return 0


DESCRIPTION = ("Write a trainer checkpoint as a Hugging Face directory (safetensors + tokenizer): BERT, "
               "Megatron-BERT (pre-LN) or ModernBERT (the modern-* presets).")
CLI = Command("trainer.export", DESCRIPTION, add_arguments, run)
build_parser, main = CLI.parser, CLI.main


if __name__ == "__main__":
    sys.exit(main())
