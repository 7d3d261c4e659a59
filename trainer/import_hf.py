"""Start pre-training from a Hugging Face BERT directory (continued pre-training on a new domain).

    python -m trainer.import_hf bert-base-uncased/ init/bert-base [--overwrite]

Reads config.json, model.safetensors (never a pickled pytorch_model.bin) and vocab.txt (+
tokenizer_config.json for casing) from a `save_pretrained` directory, and writes OUT in the layout of one
trainer checkpoint:

    OUT/weights.safetensors  our state dict (trainer/model.py names; safetensors: no pickle)
    OUT/config.json   {"model": BertConfig fields, "vocab": {sha256, size}, "source": {...}, "files": ...}
    OUT/vocab/        the model's vocab as a corpusprep vocab directory (vocab.txt byte for byte,
                      tokenizer.json): build pairs and shards with `--vocab OUT/vocab`
    OUT/artifact.json OUT is an artifact of kind "import" (corpusprep.engine.artifact): a rerun of the same
                      model files and seed is up to date, another is refused until --overwrite

`python -m trainer.export OUT HF_DIR` turns it back into the same Hugging Face weights.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from functools import partial
from pathlib import Path

import torch

from corpusprep.console import refuse_stdout
from corpusprep.engine import faults, storage
from corpusprep.engine.manifest import MANIFEST, owned_files
from corpusprep.engine.records import load_record
from corpusprep.engine.rng import rng_for
from corpusprep.errors import UsageError
from corpusprep.tokenize import VocabInfo
from corpusprep.tokenize.vocab import vocab_from_file
from trainer.checkpoint import CONFIG, WEIGHTS, load_tensors, save_model
from trainer.checkpoint_checks import check_state
from trainer.command import Command
from trainer.export import EXPORT_WEIGHTS_FILE, FAULT_POINT, check_hf_model, output_artifact, write_files
from trainer.hf_families import from_hf
from trainer.model import BertConfig, BertForPreTraining

COMMAND = "trainer.import_hf"  # in messages
READ = ("config.json", EXPORT_WEIGHTS_FILE, "vocab.txt", "tokenizer_config.json")  # what an import reads


def lowercases(hf_dir: Path) -> bool:
    """The tokenizer's casing: tokenizer_config.json's do_lower_case (BERT's default: True)."""
    path = hf_dir / "tokenizer_config.json"
    return load_record(path, "tokenizer_config").get("do_lower_case", True) if storage.is_file(path) else True


def convert(hf_dir: Path, seed: int = 0) -> tuple[BertConfig, dict[str, torch.Tensor], list[str]]:
    """(our config, our complete state dict, Hugging Face names of heads initialised fresh)."""
    config = check_hf_model(hf_dir)  # config.json and the weights' header, before any weight is read
    weights = load_tensors(hf_dir / EXPORT_WEIGHTS_FILE)
    try:
        state, fresh = from_hf(weights, config)
    except UsageError as e:
        raise UsageError(f"{hf_dir}: {e}") from None
    if fresh:  # e.g. a BertForMaskedLM checkpoint has no NSP head: start those from BERT's init
        with torch.random.fork_rng():  # leave the caller's torch RNG as it was
            torch.manual_seed(int(rng_for(seed, "import-hf-init").integers(2**62)))
            init = BertForPreTraining(config).state_dict()
        state = {k: state.get(k, init[k]) for k in init}
    check_state(state, config, hf_dir)
    return config, state, fresh


def import_hf(hf_dir: str | Path, out: str | Path, overwrite: bool = False, seed: int = 0) -> dict:
    """Write OUT (weights.safetensors, config.json, vocab/); return the record saved as config.json."""
    return import_dir(hf_dir, out, overwrite, seed)[0]


def import_dir(
    hf_dir: str | Path, out: str | Path, overwrite: bool = False, seed: int = 0
) -> tuple[dict, bool]:
    """(the record saved as config.json, True when OUT was up to date): the model is read and checked
    before OUT is touched; OUT is an artifact of kind "import" whose identity is the files read (path,
    size, mtime, as every input) and the seed."""
    hf_dir, out = Path(hf_dir), Path(out)
    if not storage.is_file(hf_dir / "vocab.txt"):
        raise UsageError(f"{hf_dir}: no vocab.txt (only WordPiece BERT tokenizers can be imported)")
    cased = not lowercases(hf_dir)  # the small files first: a bad one fails before the weights are read
    config, state, fresh = convert(hf_dir, seed)
    vocab = VocabInfo.load(hf_dir)  # also checks the five special tokens are present
    if vocab.size != config.vocab_size:
        raise UsageError(f"{hf_dir / 'vocab.txt'}: {vocab.size} tokens, config.json: {config.vocab_size}")
    record = {
        "model": asdict(config),
        "vocab": {"sha256": vocab.sha256, "size": vocab.size, "path": "vocab"},
        "source": {"huggingface": storage.url(storage.resolve(hf_dir)), "initialized_fresh": fresh},
    }
    read = [hf_dir / name for name in READ if storage.is_file(hf_dir / name)]
    stats = {p: storage.stat(p) for p in read}
    files = [[storage.url(storage.resolve(p)), s.st_size, s.st_mtime_ns] for p, s in stats.items()]
    identity = {"inputs": {"files": files}, "options": {"seed": seed}}
    with output_artifact(out, "import", identity, [hf_dir], overwrite, COMMAND) as art:
        if art.complete is not None:
            return record, True
        # the vocab directory first, an artifact of its own inside this one (build-pairs --vocab OUT/vocab)
        vocab_from_file(hf_dir / "vocab.txt", out / "vocab", cased=cased, part_of=out)
        faults.reached(FAULT_POINT)
        with _model_dir(art.work / "model") as model:  # weights.safetensors, then config.json recording its
            save_model(model, state, record)  # sha256
            vocab_files = [f"vocab/{name}" for name in (*owned_files(out / "vocab"), MANIFEST)]
            write_files(art, {name: partial(_move, model / name) for name in (WEIGHTS, CONFIG)})
        art.commit(files=[*vocab_files, WEIGHTS, CONFIG])
    copied = hashlib.sha256(storage.read_bytes(out / "vocab" / "vocab.txt")).hexdigest()
    assert copied == vocab.sha256, "vocab.txt must be copied byte for byte"
    return record, False


@contextlib.contextmanager
def _model_dir(work: Path) -> Iterator[Path]:
    """Where the model's files are written before they go into place: the artifact's work directory on a
    local disk (each file renamed from there), a local temporary directory where OUT is on an object store
    (each file put from there: safetensors writes local files only)."""
    if storage.store_for(work).local(work) is not None:
        storage.makedirs(work)
        yield work
        return
    with tempfile.TemporaryDirectory(prefix=".corpusprep-") as staging:
        yield Path(staging)


def _move(source: Path, tmp: Path) -> None:
    storage.replace(source, tmp)  # written in the work directory: to its temporary name, then into place


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "hf_dir", type=Path, help="a save_pretrained directory (config.json, weights, vocab.txt)"
    )
    parser.add_argument("out", type=Path, help="output directory: weights.safetensors, config.json, vocab/")
    parser.add_argument(
        "--overwrite", action="store_true",
        help="replace an import of another model or seed in OUT (only its own files)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for heads the checkpoint lacks (default: 0)"
    )


def run(args: argparse.Namespace) -> int:
    refuse_stdout(args.out, "OUT", "a directory (weights.safetensors, config.json, vocab/)")
    record, reused = import_dir(args.hf_dir, args.out, args.overwrite, args.seed)
    if reused:
        print(f"{storage.url(args.out)}: up to date (the same model files and seed); nothing to do")
        return 0
    model, fresh = record["model"], record["source"]["initialized_fresh"]
    shown = storage.url(args.out)
    sizes = f"{model['num_layers']} layers, hidden {model['hidden_size']}, vocab {model['vocab_size']}"
    print(f"wrote {shown}: {sizes}")
    if fresh:
        print(f"initialised fresh (not in the checkpoint): {', '.join(fresh)}")
    return 0


DESCRIPTION = "Convert a Hugging Face BERT directory into initial weights + vocab for the trainer."
CLI = Command("trainer.import_hf", DESCRIPTION, add_arguments, run)
build_parser, main = CLI.parser, CLI.main


if __name__ == "__main__":
    sys.exit(main())
