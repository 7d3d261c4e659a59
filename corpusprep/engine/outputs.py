"""Output kinds: how a directory is recognised as a corpusprep output, finished or not, and which."""

from __future__ import annotations

from pathlib import Path

from corpusprep.engine import records
from corpusprep.engine.lock import LOCK_NAME
from corpusprep.engine.manifest import MANIFEST, WORK, read_manifest
from corpusprep.errors import DataError

# What marks the corpusprep outputs that are not artifacts (their writers are `pipelines/runner.py` and
# `trainer/`): another kind's, so never written into by a command, not even with --overwrite.
PIPELINE_RUN_FILES = ("pipeline.json", "stages")  # beside run.json, written before the first stage
TRAINER_RUN_FILES = ("checkpoints", "metrics.jsonl")  # trainer/checkpoint.py, trainer/train.py
# a checkpoint directory (trainer.checkpoint.save, trainer.import_hf); model.pt: one of before the format
# without pickle, which is still another command's output (never written into)
CHECKPOINT_FILES = (records.CHECKPOINT_WEIGHTS, records.PICKLED_CHECKPOINT[0])
HF_MODEL_FILES = ("config.json", "model.safetensors")  # a Hugging Face model directory (trainer.export's)


def other_output(directory: str | Path, *, strict: bool = False) -> tuple[str, str] | None:
    """(artifact kind, description) of a corpusprep output that is not an artifact: a pipeline run directory
    ("pipeline"), a training run or a model checkpoint ("train", the kind of a pipeline's training stage,
    which resumes a run launched by hand), a Hugging Face model ("export"); None for anything else. `strict`
    (for the directories above an output, `enclosing_output`): only signs no user folder has by chance (a
    checkpoint's weights inside checkpoints/step-*, a pipeline's record beside stages/), not a folder merely
    named `checkpoints`."""
    d = Path(directory)
    if strict:
        pipeline = (d / "stages").is_dir() and any((d / n).is_file() for n in ("pipeline.json", "run.json"))
        run = any(any((d / "checkpoints").glob(f"step-*/{name}")) for name in CHECKPOINT_FILES)
        checkpoint = (d / "config.json").is_file() and any((d / n).is_file() for n in CHECKPOINT_FILES)
    else:
        pipeline = any((d / name).exists() for name in PIPELINE_RUN_FILES)
        run = any((d / name).exists() for name in TRAINER_RUN_FILES)
        checkpoint = any((d / name).exists() for name in CHECKPOINT_FILES)
    if pipeline:
        return "pipeline", "a pipeline run"
    if run:
        return "train", "a training run"
    if checkpoint:
        return "train", "a model checkpoint"
    if all((d / name).is_file() for name in HF_MODEL_FILES):  # trainer.export's, or any save_pretrained BERT
        return "export", "a Hugging Face model"
    return None


def held_output(directory: str | Path) -> tuple[str, str] | None:
    """(kind, description) of the corpusprep output `directory` holds: an artifact, finished or not (its
    kind from the manifest or from `.work/run.json`; "damaged" when the record is), else `other_output`'s
    signs; None for none."""
    d = Path(directory)
    for path, record_kind, prefix in ((d / MANIFEST, "artifact", ""),
                                      (d / WORK / "run.json", "artifact_run", "an unfinished ")):  # fmt: skip
        try:
            record = records.load_record(path, record_kind, missing_ok=True)
        except (DataError, OSError):
            return "damaged", f"a corpusprep output whose {path.relative_to(d)} is damaged"
        if record is not None:
            kind = str(record["kind"] if record_kind == "artifact" else record["identity"].get("kind"))
            return kind, f"{prefix}corpusprep {kind}"
    return other_output(d)


def owned_files(directory: str | Path) -> list[str]:
    manifest = read_manifest(directory)
    return sorted(manifest["files"]) if manifest else []


def is_artifact_dir(path: str | Path, *, lock: bool = True) -> bool:
    """A directory holding a corpusprep output, finished or not: never read as corpus. `lock=False`: a lock
    alone is no sign (a refused command leaves one wherever it was pointed)."""
    path = Path(path)
    built = (path / MANIFEST).is_file() or (path / WORK / "run.json").is_file()
    return built or (lock and (path / LOCK_NAME).exists())

