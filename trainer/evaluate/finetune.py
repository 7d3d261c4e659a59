"""One fine-tuning run: a BERT from a Hugging Face directory, pre-trained or randomly initialised, trained on
the task's training examples with `transformers.Trainer`, the epoch chosen on dev, and each scored split's
predictions and scores. Every task kind runs here the same way (`tasks/base.py`: encode, the model's
outputs, decode, score).

The field's protocol (Devlin et al. 2019, A.3; GLUE practice): dev is scored after every epoch (and at the
end of a fractional last one); the run keeps the weights of the epoch with the best dev score (the headline
metric; the earliest of equals) and scores test once, with those weights. `select = "last"` keeps the last
epoch's instead. Training that diverges (a loss or a weight that is not finite) is detected and reported
with the run, never scored as if it had trained.

Randomness: the initial weights (all of them for the random model, the task head for the pre-trained one)
are drawn under `seeded(init seed)`; data order and dropout come from the Trainer's seed. Both are derived
from the run's seed, and are the same for the two models, so a seed's pair of runs differs only by the
initial encoder weights. Scoring dev between epochs draws nothing. Nothing leaks into the caller's random
state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from corpusprep.engine.rng import stable_hash
from corpusprep.errors import UsageError
from trainer.evaluate.data import TaskData
from trainer.evaluate.settings import EvalSettings
from trainer.evaluate.tasks import headline
from trainer.evaluate.tasks.base import Encoded

INITS = ("pretrained", "random")
EXTRA = "pip install -e '.[eval]'"


def require_transformers() -> Any:
    """transformers, or one line naming the extra that brings it (an optional dependency: the trainer
    itself needs only torch, numpy and pyarrow)."""
    try:
        import accelerate  # noqa: F401  transformers.Trainer needs it
        import transformers
    except ImportError as error:
        raise UsageError(f"trainer.evaluate needs transformers and accelerate ({error.name} is missing): "
                         f"{EXTRA}") from None
    return transformers


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Draws from torch's (and Python's and numpy's) global generators, seeded, then the caller's states
    back: transformers initialises weights and Trainer seeds itself through them."""
    states = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=list(range(torch.cuda.device_count()))):
        torch.manual_seed(seed)
        try:
            yield
        finally:
            random.setstate(states[0])
            np.random.set_state(states[1])


def sub_seed(seed: int, purpose: str) -> int:
    return stable_hash(seed, "evaluate", purpose) % 2**31


@contextlib.contextmanager
def _quiet(transformers) -> Iterator[None]:
    """No warning that the new task head is untrained (here that is the point) and no progress bar while
    weights load: the evaluation's own lines say what happens."""
    logging = transformers.utils.logging
    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def load_tokenizer(hf_dir: Path):
    transformers = require_transformers()
    with _quiet(transformers):
        return transformers.AutoTokenizer.from_pretrained(str(hf_dir))


def device_of(name: str) -> str:
    return ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name


def build_model(hf_dir: Path, data: TaskData, init: str, seed: int):
    """The task kind's model, of the export's own family (BERT, Megatron-BERT, ModernBERT: the Auto classes
    read config.json's model_type), from `hf_dir` with a fresh task head ("pretrained"), or the same
    architecture with every weight drawn fresh ("random": from the config alone; the checkpoint's weights
    are never read)."""
    transformers = require_transformers()
    cls = getattr(transformers, data.task.model_class)
    config = transformers.AutoConfig.from_pretrained(str(hf_dir), num_labels=data.task.num_labels(data))
    with seeded(sub_seed(seed, "init")), _quiet(transformers):
        if init == "pretrained":
            return cls.from_pretrained(str(hf_dir), config=config)
        return cls.from_config(config)


# ---------------------------------------------------------------- predicting and scoring


@torch.no_grad()
def predict(model, collator, kind, encoded: Encoded, batch_size: int) -> list[dict[str, np.ndarray]]:
    """The model's outputs (`kind.outputs`) for each feature, in length-sorted batches; a token-level
    output cut to its feature's length."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    order = sorted(range(len(encoded.features)), key=lambda i: len(encoded.features[i]["input_ids"]))
    out: list[dict[str, np.ndarray]] = [{}] * len(order)
    for start in range(0, len(order), batch_size):
        chosen = order[start : start + batch_size]
        batch = collator([{k: v for k, v in encoded.features[i].items() if k != "labels"} for i in chosen])
        result = model(**{k: v.to(device) for k, v in batch.items()})
        arrays = {name: getattr(result, name).float().cpu().numpy() for name in kind.outputs}
        for row, i in enumerate(chosen):
            length = len(encoded.features[i]["input_ids"])
            out[i] = {name: a[row, :length] if kind.token_level else a[row] for name, a in arrays.items()}
    model.train(was_training)
    return out


@dataclasses.dataclass
class Scored:
    predictions: list[Any]
    scores: dict[str, Any]


def score_split(model, collator, data: TaskData, split: str, encoded: Encoded, batch_size: int,
                state: dict) -> Scored:
    kind, examples = data.task, data.scored[split].examples
    outputs = predict(model, collator, kind, encoded, batch_size)
    predictions = kind.decode(data, split, examples, encoded, outputs, state)
    golds = [kind.gold(data, e) for e in examples]
    scores = kind.score(data, golds, predictions)
    if encoded.truncated:
        scores["truncated"] = encoded.truncated
    return Scored(predictions, scores)


# ---------------------------------------------------------------- training


def _weights_finite(model) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def snapshot(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def train(model, tokenizer, data: TaskData, encoded: Encoded, settings: EvalSettings, seed: int):
    """Fine-tune `model` in place (`fit`); returns it, in eval mode."""
    fit(model, tokenizer, data, encoded, settings, seed)
    return model


def fit(model, tokenizer, data: TaskData, encoded: Encoded, settings: EvalSettings, seed: int,
        callbacks: list | None = None):
    """Fine-tune `model` in place with transformers.Trainer: AdamW, linear warm-up then decay, the settings'
    epochs (as a number of steps, so both models take exactly the same schedule). Returns the Trainer's
    TrainOutput (its `training_loss`: the mean loss of all steps, NaN ones included)."""
    transformers = require_transformers()
    per_epoch = math.ceil(len(encoded.features) / settings.batch_size)
    steps = max(1, math.ceil(settings.epochs * per_epoch))
    options = {
        "per_device_train_batch_size": settings.batch_size,
        "max_steps": steps,
        "learning_rate": settings.lr,
        "lr_scheduler_type": "linear",
        "warmup_steps": round(settings.warmup * steps),
        "weight_decay": settings.weight_decay,
        "seed": sub_seed(seed, "train"),
        "data_seed": sub_seed(seed, "data"),
        "use_cpu": device_of(settings.device) == "cpu",
        "report_to": "none",
        "save_strategy": "no",
        "logging_strategy": "no",
        "disable_tqdm": True,
        "logging_nan_inf_filter": False,  # a NaN loss counts in training_loss: divergence is seen
        "dataloader_num_workers": 0,
    }
    # batches of similar lengths: less padding (transformers 5 names the option; 4.x had a flag)
    names = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    options |= {"train_sampling_strategy": "group_by_length"} if "train_sampling_strategy" in names else \
        {"group_by_length": True}
    with tempfile.TemporaryDirectory(prefix="corpusprep-finetune-") as scratch, seeded(seed), \
            _quiet(transformers):
        args = transformers.TrainingArguments(output_dir=scratch, **options)
        trainer = transformers.Trainer(model=model, args=args, train_dataset=encoded.features,
                                       data_collator=data.task.collator(transformers, tokenizer),
                                       callbacks=callbacks)
        trainer.remove_callback(transformers.PrinterCallback)  # its dict of run times on stdout
        output = trainer.train()
    model.eval()
    return output


def epoch_callback(transformers, on_epoch):
    """A TrainerCallback calling `on_epoch(epoch)` at the end of every epoch (a fractional last one too)."""

    class EveryEpoch(transformers.TrainerCallback):
        def on_epoch_end(self, args, state, control, **kwargs):
            on_epoch(round(state.epoch, 4))

    return EveryEpoch()


def run(hf_dir: Path, data: TaskData, settings: EvalSettings, init: str, seed: int) -> dict[str, Any]:
    """Fine-tune one model (`init`: pretrained | random) with one seed, the epoch chosen on dev (see the
    module's docstring). Returns the run: each scored split's scores and predictions, the chosen epoch, the
    dev curve ([epoch, headline score] per epoch), whether training diverged, the decoding state, and what
    encoding each split did (examples, features, truncated...)."""
    transformers = require_transformers()
    tokenizer = load_tokenizer(hf_dir)
    kind, metric = data.task, headline(data.task, settings.metric)
    model = build_model(hf_dir, data, init, seed)
    collator = kind.collator(transformers, tokenizer)
    encoded = {name: kind.encode(tokenizer, data, s.examples, settings, train=False) for name, s in
               data.scored.items()}
    batch = settings.batch_size * 2
    curve: list[list[float]] = []
    best: dict[str, Any] = {}
    state: dict = {}

    def on_epoch(epoch: float) -> None:
        dev = score_split(model, collator, data, "dev", encoded["dev"], batch, state)
        value = dev.scores[metric]
        curve.append([epoch, value])
        if settings.select == "last" or not best or value > best["value"]:
            best.update(epoch=epoch, value=value, dev=dev, weights=snapshot(model), state=dict(state))

    train_features = kind.encode(tokenizer, data, data.train.examples, settings, train=True)
    counts = {"train": train_features.counts()} | {name: e.counts() for name, e in encoded.items()}
    callbacks = [epoch_callback(transformers, on_epoch)]
    output = fit(model, tokenizer, data, train_features, settings, seed, callbacks)
    if not curve or curve[-1][0] < settings.epochs - 1e-3:  # the end of a fractional last epoch
        on_epoch(settings.epochs)
    diverged = None
    if not math.isfinite(output.training_loss) or not _weights_finite(model):
        diverged = f"training loss {output.training_loss:.4g}" if not math.isfinite(output.training_loss) \
            else "weights not finite"
    if best["epoch"] != curve[-1][0]:
        model.load_state_dict(best["weights"])
    state = best["state"]
    results = {"dev": best["dev"]}
    for name in data.scored:
        if name != "dev":  # test: once, with the chosen epoch's weights
            results[name] = score_split(model, collator, data, name, encoded[name], batch, state)
    return {
        "scores": {name: r.scores for name, r in results.items()},
        "predictions": {name: r.predictions for name, r in results.items()},
        "collapsed": {name: c for name, r in results.items() if (c := kind.collapsed(r.predictions))},
        "epoch": best["epoch"],
        "curve": curve,
        "diverged": diverged,
        "training_loss": output.training_loss if math.isfinite(output.training_loss) else None,
        "state": state,
        "encoded": counts,
    }
