"""Where a training run starts: its run directory's rules (`check_run_dir`), then its own newest checkpoint
(a resume: `find_resume`, which refuses a checkpoint saved with settings this run contradicts,
`resume_conflicts`, or trained on other shards, `check_resume_shards`), or another model's weights
(checkpoint.init_from: `init_weights`), or nothing (a new run). The states themselves are read and checked
by trainer.checkpoint and trainer.checkpoint_checks as `Trainer.load_state_dict` loads them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from corpusprep import objectives
from corpusprep.engine import storage
from corpusprep.engine.outputs import held_output
from corpusprep.engine.placement import check_not_inside, check_not_nested
from corpusprep.errors import UsageError
from trainer import checkpoint
from trainer.checkpoint_checks import check_state
from trainer.config import ModelConfig, ScheduleConfig, TrainConfig
from trainer.dist import Dist, log
from trainer.model import BertConfig
from trainer.shards import Shards


def check_run_dir(config: TrainConfig) -> None:
    """The run dir is never an input, nor inside another output, nor another command's output, finished
    (a manifest of another kind; a pipeline run), unfinished (a killed `build-pairs`: `.work/run.json`) or
    damaged; a pipeline's own train stage (an artifact of kind "train") is one. A run writing or reading it
    now is refused by the lock `train` takes next."""
    run_dir = Path(config.logging.run_dir)
    if config.data.shards:
        check_not_nested(run_dir, [config.data.shards], "trainer")  # never write into its input
    check_init_from(config)
    # another run, a checkpoint, an artifact; not a pipeline run (its train stage, started by hand)
    check_not_inside(run_dir, None, "pick another run dir", pipeline_runs=False)
    found = held_output(run_dir)
    if found is not None and (found[0] != "train" or found[1] == "a model checkpoint"):
        raise UsageError(f"{run_dir}: holds {found[1]}, not a training run; pick another run dir")
    written = ((run_dir / "checkpoints", storage.is_dir), (run_dir / "metrics.jsonl", storage.is_file))
    for path, plain in written:  # what it writes: never through a link
        if path.is_symlink() or (storage.exists(path) and not plain(path)):
            raise UsageError(f"{path}: a link, or not the kind of file the trainer writes there; move it "
                             "away or pick another run dir")


LONGER = "to train a finished run longer, pass --resume with more --steps or a larger --budget " \
         "(docs/manual/training.md)"


def check_init_from(config: TrainConfig, where: str = "config: ", own: str = "this run's own run dir",
                    longer: str = LONGER) -> None:
    """checkpoint.init_from is never inside the run's own run dir, where the run writes its checkpoints and
    removes older ones (and a pipeline's rerun clears them before reading): the weights it starts from would
    not stay. trainer.run (`check_run_dir`) and a pipeline's train stage (pipelines.train_stage, at planning)
    both ask here; `where`, `own` and `longer` word the refusal for each."""
    init = config.checkpoint.init_from
    run_dir = storage.resolve(config.logging.run_dir)
    if init and (storage.resolve(init) == run_dir or run_dir in storage.resolve(init).parents):
        raise UsageError(f"{where}checkpoint.init_from {init}: {own}, where the run writes its checkpoints "
                         f"and removes older ones; {longer}, or copy the checkpoint elsewhere first")


class Finished(Exception):
    """The run dir's newest checkpoint is at or past the last step: nothing to train."""

    def __init__(self, found: Path, saved: dict):
        self.found, self.saved = found, saved


def find_resume(config: TrainConfig, ranks: Dist) -> Path | None:
    """The checkpoint a run of `config` continues from (its run dir's newest), after the checks that need no
    data: None for a new run; `Finished` when that checkpoint is at or past the schedule's end."""
    run_dir = Path(config.logging.run_dir)
    check_run_dir(config)
    found = checkpoint.latest(run_dir)
    if found is None:
        if config.checkpoint.resume:  # said, not silent: a mistyped run dir would start over unnoticed
            log(ranks, f"{storage.url(run_dir)}: no checkpoint to resume from; starting at step 0")
        return None
    saved_train = checkpoint.saved_train(found)  # its values checked: types and ranges
    if conflicts := resume_conflicts(asdict(saved_train), asdict(config)):
        raise UsageError(
            f"{found}: saved with other settings ({'; '.join(conflicts[:3])}); use another run dir, or "
            "the settings it was started with"
        )
    saved = checkpoint.read_state(found)  # trainer.json only: the tensors load with the other states
    step, elapsed = saved["step"], saved.get("elapsed", 0.0)
    if config.schedule.finished(step, elapsed):
        raise Finished(found, saved)
    if not config.checkpoint.resume:
        raise UsageError(
            f"{storage.url(run_dir)}: has checkpoints up to {found.name}; pass --resume or use "
            "another run dir"
        )
    if saved_train.schedule.finished(step, elapsed):  # a finished run, continued: said before it trains
        log(ranks, f"{found.name}: the run finished there ({limits(saved_train.schedule)}); it continues to "
                   f"{limits(config.schedule)}, at the learning rates of the new limits' schedule from step "
                   f"{step} on (docs/manual/training.md)")
    return found


def limits(schedule: ScheduleConfig) -> str:
    """A schedule's limits in words: "schedule.steps 6", "schedule.budget 15m", or both."""
    given = {"steps": schedule.steps, "budget": schedule.budget or None}
    return " and ".join(f"schedule.{k} {v}" for k, v in given.items() if v is not None) or \
        f"schedule.steps {schedule.max_steps} (the default)"


def shards_record(shards: Shards) -> dict:
    """What a resumed run must find again in its shards: vocab, objective, length and training rows."""
    train = [(s.path.name, s.sha256) for s in shards.files("train")]
    return {
        "vocab_sha256": shards.manifest.get("vocab", {}).get("sha256"),
        "objective": shards.objective.name,
        "max_seq_length": shards.manifest.get("max_seq_length"),
        "train_shards_sha256": hashlib.sha256(json.dumps(train).encode()).hexdigest(),
    }


def check_resume_shards(found: Path, current: dict, directory: Path) -> None:
    """Refuse, naming what differs, to continue on shards other than the checkpoint's: compared by content
    (vocab, objective, length, the training shards' checksums), so a copy at another path is the same."""
    record = checkpoint.read_config(found)
    saved = record.get("shards")
    if not saved:  # a run from before the content record: its vocab, and the shards' path
        path = record.get("train", {}).get("data", {}).get("shards")
        saved = {"vocab_sha256": record.get("vocab", {}).get("sha256")}
        saved["path"] = path and str(Path(path).resolve())
        current = current | {"path": str(Path(directory).resolve())}
    differ = [f"{k} {saved[k]} -> {current[k]}" for k in current if saved.get(k) and saved[k] != current[k]]
    if differ:
        raise UsageError(f"{found}: trained on other shards ({'; '.join(differ)}); resume on the shards it "
                         "was trained on, or start another run dir")


# What must not change when a run continues from its checkpoint (the rest: steps, cadences, paths of logs)
# (the seed and data.chunk_rows make the global order of examples; the batch size, the DataLoader workers and
# the number of ranks may change: the position is a place in that order; `data.shards` is checked by
# content, not path, `check_resume_shards`: a copy elsewhere is the same data; the model as
# resolved, by `Trainer.load_state_dict`; the warm-up as resolved, `warmup_conflict`). The limits
# (schedule.steps, schedule.budget) may change: the schedule is then the new limits' from the step reached on
# (docs/manual/training.md, "Training a finished run longer").
RESUME_KEYS = (
    "optim.",
    "seed",
    "data.chunk_rows",
    "data.pad_multiple",
    "data.dynamic_masking",
    "schedule.grad_accum",
    "schedule.decay_",
    "schedule.batch_ramp_",
    "checkpoint.init_from",
)


def _flat(ranks: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in ranks.items():
        out |= _flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
    return out


def resume_conflicts(saved: dict, current: dict) -> list[str]:
    """Settings of `current` (TrainConfig as a dict) that differ from those a checkpoint was saved with."""
    before, after = _flat(saved), _flat(current)

    def norm(key: str, value: Any) -> Any:
        if key == "checkpoint.init_from" and value:
            return str(Path(str(value)).resolve())  # saved resolved (`config_record`); older runs as typed
        return value

    keys = sorted(k for k in set(before) | set(after) if k.startswith(RESUME_KEYS))
    differ = [f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in keys
              if norm(k, before.get(k)) != norm(k, after.get(k))]
    return differ + warmup_conflict(before, after)


def warmup_conflict(before: dict, after: dict) -> list[str]:
    """The warm-up each side's settings give the run as it was saved (its steps or budget), where they
    differ: so giving the warm-up a run had by its default (10% of its steps) in steps is no change, and
    more steps (or budget) with the same warm-up settings are none either (the schedule of the new limits
    follows them: a default warm-up stays 10% of the steps)."""
    limits = {"steps": before.get("schedule.steps"), "budget": before.get("schedule.budget") or ""}

    def warmup(settings: dict) -> tuple[Any, str]:
        given = {k: settings.get(f"schedule.{k}") for k in ("warmup_steps", "warmup_fraction")}
        schedule = ScheduleConfig(**limits, **given)
        how = next((f"schedule.{k}={v!r}" for k, v in given.items() if v is not None), "the default")
        if schedule.budget:
            return schedule.warmup_share, f"{schedule.warmup_share:g} of the budget ({how})"
        return schedule.warmup, f"{schedule.warmup} steps of {schedule.max_steps} ({how})"

    (was, said), (now, says) = warmup(before), warmup(after)
    return [] if was == now else [f"schedule warm-up: {said} -> {says}"]


def init_weights(
    source: str | Path,
    model: ModelConfig,
    vocab_size: int,
    vocab_sha256: str | None,
    where: Path,
    objective: str = objectives.DEFAULT,
) -> tuple[BertConfig, dict[str, torch.Tensor], Path]:
    """checkpoint.init_from: (architecture, weights, checkpoint dir) to start a run from.

    `source`: a run dir (its newest checkpoint), a step-N checkpoint or a `trainer.import_hf` output. The
    architecture is the saved one; `model` may repeat it but not contradict it, and its dropout rates
    (training settings) replace the saved ones. The vocab must be the shards' (`where`: their manifest):
    same size, and the same sha256 when the checkpoint records one. The sentence head follows `objective`
    (the shards'): dropped for `none`; kept from a model trained on the same objective, else fresh.
    """
    path = checkpoint.find_checkpoint(Path(source))
    saved_model, state, saved = checkpoint.load_checkpoint(path)
    if conflicts := model.conflicts(saved_model):
        raise UsageError(f"{path}: init_from a model other than the requested one: {', '.join(conflicts)}")
    if saved_model.vocab_size != vocab_size:
        raise UsageError(f"{path}: a model of {saved_model.vocab_size} tokens; {where}: {vocab_size} tokens")
    saved_sha = saved.get("vocab", {}).get("sha256")
    if saved_sha and vocab_sha256 and saved_sha != vocab_sha256:
        raise UsageError(
            f"{path / 'config.json'}: vocab sha256 {saved_sha[:12]}... but {where}: {vocab_sha256[:12]}... "
            "(build the pairs and shards with the model's vocab)"
        )
    # every weight, right shapes: nothing left random
    check_state(state, saved_model, path / checkpoint.WEIGHTS)
    bert = replace(saved_model, dropout=model.dropout, attention_dropout=model.attention_dropout,
                   objective=objective)
    if saved_model.objective != objective and bert.sentence_head:  # another task's head: ours starts fresh
        state = {k: v for k, v in state.items() if not k.startswith(SENTENCE_HEAD)}
    return bert, state, path


SENTENCE_HEAD = ("pooler.", "nsp_head.")  # the weights only objectives with a sentence task have
