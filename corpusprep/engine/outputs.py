"""Output kinds: THE registry of what corpusprep and its trainer write, how each is recognised, and how
`corpusprep validate` checks it.

An artifact (vocab, pairs, shards, a demo corpus, a training stage, an evaluation) is recognised by its
record: `artifact.json` when finished, `.work/run.json` while it is built. The other outputs (a pipeline
run directory, a training run, a model checkpoint, a Hugging Face model: trainer.export writes one as an
artifact, but any other is an output too) are recognised by their signs:
declarative file and folder names, loose ones (anything named like that is never written into by another
command) and strict ones (for the directories above an output and the directories a corpus walk passes over,
where a user's folder may have a `checkpoints/` of its own). An artifact kind's signs recognise an older
output without a manifest, for `corpusprep validate` only.

Each kind names its validator as "module:function", imported when a directory of that kind is validated:
the engine imports no producer, and `corpusprep --help` loads no torch, numpy or pyarrow.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from corpusprep.engine import records, storage
from corpusprep.engine.lock import LOCK_NAME
from corpusprep.engine.manifest import MANIFEST, RUN_RECORD
from corpusprep.errors import DataError, InputError

Validator = Callable[[Path], "tuple[list[str], str]"]  # directory -> (problems, one-line summary)


@dataclass(frozen=True)
class Sign:
    """Names relative to a directory, every given condition holding: each of `files` a file, each of
    `dirs` a folder, one of `any_of` there (file or folder), one of `any_file` a file, one of `any_dir` a
    folder, one of `globs` matching something."""

    files: tuple[str, ...] = ()
    dirs: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    any_file: tuple[str, ...] = ()
    any_dir: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()

    def found(self, d: Path) -> bool:
        file, folder = storage.is_file, storage.is_dir
        return (all(file(d / n) for n in self.files) and all(folder(d / n) for n in self.dirs)
                and (not self.any_of or any(storage.exists(d / n) for n in self.any_of))
                and (not self.any_file or any(file(d / n) for n in self.any_file))
                and (not self.any_dir or any(folder(d / n) for n in self.any_dir))
                and (not self.globs or any(storage.glob(d, g) for g in self.globs)))


@dataclass(frozen=True)
class OutputKind:
    name: str  # the registry's key
    kind: str  # the artifact kind it counts as: an Artifact of this kind may be written over it
    what: str  # "a training run": in messages, "holds a training run"
    title: str  # "trainer run directory": what `corpusprep validate` says it is
    validator: str  # "module:function" (Validator), imported on use
    artifact: bool = False  # recognised by its manifest alone; `signs` only for an older one without
    signs: Sign | None = None  # loose
    strict: Sign | None = None  # no user folder has these by chance
    # What an Artifact of this kind (engine.artifact) takes from its row, so that a producer names its kind
    # and nothing more: `owns`, glob patterns of the relative paths it writes (--overwrite removes them; a
    # file so named that it did not write is refused); `adopt`, such files in a directory without a record
    # are its own (a training run launched by hand, then resumed by its pipeline stage); `checksums`, a
    # rerun compares the files' sha256 too, not only their sizes (small outputs: a vocab); `looks_like`,
    # the outputs recognised by signs that its own directory is (an import is a model checkpoint).
    owns: tuple[str, ...] = ()
    adopt: bool = False
    checksums: bool = False
    looks_like: tuple[str, ...] = ()
    # an output that is a corpus itself: a reader given its directory reads these of its files (of those the
    # manifest owns), their documents keeping the ids recorded in them (a curate output's kept ones)
    corpus: tuple[str, ...] = ()

    def adopting(self, owns: Sequence[str] | None = None) -> OutputKind:
        """This kind for files written before its artifact is opened (by hand: a test's fixture, a
        benchmark's peer output), which the artifact then takes as its own: `owns` (default: the kind's)."""
        return dataclasses.replace(self, owns=tuple(self.owns if owns is None else owns), adopt=True)

    def validate(self, directory: Path) -> tuple[list[str], str]:
        module, function = self.validator.split(":")
        found: Validator = getattr(importlib.import_module(module), function)
        return found(directory)


# the trainer's files (trainer/checkpoint.py, trainer/train.py), as names: the engine imports no trainer.
# A checkpoint's: trainer/checkpoint.py writes them, `corpusprep validate` reads them without torch.
CHECKPOINT_WEIGHTS = "weights.safetensors"  # the model's state dict
CHECKPOINT_TENSORS = "trainer.safetensors"  # the optimizer's state tensors, the RNG states
CHECKPOINT_STATE = "trainer.json"  # everything else of a training run's state (kind "trainer_state")
CHECKPOINT_CONFIG = "config.json"  # kind "checkpoint_config", with every other file's size and sha256
PICKLED_CHECKPOINT = ("model.pt", "optimizer.pt", "scheduler.pt", "trainer.pt")  # the format before: refused
WEIGHTS = (CHECKPOINT_WEIGHTS, *PICKLED_CHECKPOINT)  # model.pt & co.: the format before
STEP_WEIGHTS = tuple(f"checkpoints/step-*/{n}" for n in WEIGHTS[:2])
PIPELINE_RUN_FILES = ("pipeline.json", "stages")  # beside run.json, written before the first stage
HF_MODEL_FILES = ("config.json", "model.safetensors")  # trainer.export's, or any save_pretrained BERT
# trainer.export's files, in the order it writes them: config.json last (from_pretrained opens it first)
EXPORT_FILES = ("model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
                "special_tokens_map.json", "config.json")
# trainer.import_hf's: a model checkpoint (weights, config.json) holding its vocab directory
IMPORT_FILES = ("vocab/*", CHECKPOINT_WEIGHTS, CHECKPOINT_CONFIG)
# a pipeline's train stage: the trainer's run directory (trainer/train.py, checkpoint.py, plot.py)
TRAIN_FILES = ("checkpoints/*", "checkpoints/*/*", "metrics.jsonl", "config.toml", "*.png")
# the stages' own files (corpusprep/tokenize/vocab.py, pair/build.py, shard/build.py, trainer/evaluate)
VOCAB_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "vocab_report.json")
PAIRS_FILES = ("stats.json", "train/part-*.parquet", "validation/part-*.parquet")
SHARDS_FILES = ("manifest.json", "vocab.txt", "train/shard-*.parquet", "validation/shard-*.parquet")
EVALUATION_FILES = ("runs/*.json", "predictions/*.jsonl", "predictions/*.json", "dev-curves.png",
                    "evaluation.json", "evaluation.md")
PLOT_FILES = ("*.png",)  # a pipeline's plot stage: trainer.plot's curves of its train stage
CURATE_FILES = ("kept/part-*", "removed.jsonl", "curate.json", "report.md", "report.png")

# In the order recognition tries them (an export and a shards directory hold a vocab.txt too).
OUTPUT_KINDS = {k.name: k for k in (
    OutputKind("pipeline", "pipeline", "a pipeline run", "pipeline run directory",
               "corpusprep.validate:validate_pipeline", signs=Sign(any_of=PIPELINE_RUN_FILES),
               strict=Sign(dirs=("stages",), any_file=("pipeline.json", "run.json"))),
    OutputKind("train", "train", "a training run", "trainer run directory",
               "trainer.outputs:validate_run", signs=Sign(any_of=("checkpoints", "metrics.jsonl")),
               strict=Sign(globs=STEP_WEIGHTS), owns=TRAIN_FILES, adopt=True),
    OutputKind("checkpoint", "train", "a model checkpoint", "trainer checkpoint",
               "trainer.outputs:validate_checkpoint", signs=Sign(any_of=WEIGHTS),
               strict=Sign(files=(CHECKPOINT_CONFIG,), any_file=WEIGHTS[:2])),
    # an export is written as an artifact, and recognised by its signs too: any Hugging Face model is an
    # output no other command writes into
    OutputKind("export", "export", "a Hugging Face model", "Hugging Face export",
               "trainer.outputs:validate_export", signs=Sign(files=HF_MODEL_FILES),
               strict=Sign(files=HF_MODEL_FILES), owns=EXPORT_FILES),
    OutputKind("import", "import", "an imported model", "imported model checkpoint",
               "trainer.outputs:validate_import", artifact=True, owns=IMPORT_FILES,
               looks_like=("checkpoint",)),
    OutputKind("shards", "shards", "corpusprep shards", "shards directory",
               "corpusprep.shard.validate:validate_shards_dir", artifact=True,
               signs=Sign(files=("manifest.json",)), owns=SHARDS_FILES),
    OutputKind("vocab", "vocab", "corpusprep vocab", "vocab directory",
               "corpusprep.tokenize.validate:validate_vocab", artifact=True,
               signs=Sign(files=("vocab.txt",)), owns=VOCAB_FILES, checksums=True),
    OutputKind("pairs", "pairs", "corpusprep pairs", "pairs directory",
               "corpusprep.pair.validate:validate_pairs", artifact=True,
               signs=Sign(files=("stats.json",), any_dir=("train", "validation")), owns=PAIRS_FILES),
    OutputKind("evaluate", "evaluate", "corpusprep evaluate", "evaluation directory",
               "trainer.outputs:validate_evaluation", artifact=True, owns=EVALUATION_FILES),
    OutputKind("curate", "curate", "curated documents", "curate directory",
               "corpusprep.curate.validate:validate_curated", artifact=True, owns=CURATE_FILES,
               corpus=("kept/part-*",)),
    OutputKind("corpus", "corpus", "corpusprep corpus", "demo corpus directory",
               "corpusprep.validate:validate_artifact", artifact=True, owns=("demo*.json*",)),
    OutputKind("plot", "plot", "corpusprep training curves", "training curves directory",
               "corpusprep.validate:validate_artifact", artifact=True, owns=PLOT_FILES),
)}


def recognise(directory: str | Path, *, strict: bool = False) -> OutputKind | None:
    """The output that is not an artifact `directory` holds (a pipeline run, a training run, a model
    checkpoint, a Hugging Face model), by its signs; None for anything else. `strict` (for the directories
    above an output, and a corpus walk): only signs no user folder has by chance (a checkpoint's weights
    inside checkpoints/step-*, a pipeline's record beside stages/), not a folder merely named
    `checkpoints`."""
    d = Path(directory)
    for kind in OUTPUT_KINDS.values():
        sign = kind.strict if strict else kind.signs
        if not kind.artifact and sign is not None and sign.found(d):
            return kind
    return None


def held_output(directory: str | Path) -> tuple[str, str] | None:
    """(kind, description) of the corpusprep output `directory` holds: an artifact, finished or not (its
    kind from the manifest or from `.work/run.json`; "damaged" when the record is), else `recognise`'s
    signs; None for none."""
    root = Path(directory)
    for path, record_kind, prefix in ((root / MANIFEST, "artifact", ""),
                                      (root / RUN_RECORD, "artifact_run", "an unfinished ")):
        try:
            record = records.load_record(path, record_kind, missing_ok=True)
        except (DataError, OSError):
            return "damaged", f"a corpusprep output whose {path.relative_to(root)} is damaged"
        if record is not None:
            kind = str(record["kind"] if record_kind == "artifact" else record["identity"].get("kind"))
            # "a Hugging Face model"
            finished = OUTPUT_KINDS[kind].what if kind in OUTPUT_KINDS and not prefix else ""
            return kind, finished or f"{prefix}corpusprep {kind}"
    found = recognise(root)
    return (found.kind, found.what) if found else None


def is_artifact_dir(path: str | Path, *, lock: bool = True) -> bool:
    """A directory holding a corpusprep artifact, finished or not: never read as corpus. `lock=False`: a lock
    alone is no sign (a refused command leaves one wherever it was pointed)."""
    path = Path(path)
    built = storage.is_file(path / MANIFEST) or storage.is_file(path / RUN_RECORD)
    return built or (lock and storage.exists(path / LOCK_NAME))


def kind_of(directory: Path) -> OutputKind | None:
    """Which output `directory` holds, for `validate`: its manifest's kind, or an unfinished build's, else
    the first kind whose signs it has (an artifact's: an older one without a manifest, whose check then
    names the missing manifest)."""
    found = held_output(directory) if is_artifact_dir(directory, lock=False) else None
    if found is not None and found[0] in OUTPUT_KINDS:  # a damaged record: by the signs
        return OUTPUT_KINDS[found[0]]
    return next((k for k in OUTPUT_KINDS.values() if k.signs is not None and k.signs.found(directory)), None)


def validate(path: str | Path) -> tuple[str, list[str], str]:
    """(what it is, problems, summary) of any output in the registry, by its kind's validator; one line
    (InputError) for a path that is none of them."""
    path, shown = Path(path), storage.url(path)
    if not storage.exists(path):
        raise InputError(f"{shown}: no such directory")
    if not storage.is_dir(path):
        raise InputError(f"{shown}: is a file; validate takes a directory corpusprep or the trainer wrote")
    kind = kind_of(path)
    if kind is None:
        raise InputError(
            f"{shown}: not a corpusprep output (no manifest.json, vocab.txt, stats.json, checkpoints/...)"
        )
    problems, summary = kind.validate(path)
    return kind.title, problems, summary
