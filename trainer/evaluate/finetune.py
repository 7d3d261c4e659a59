"""One fine-tuning run: a BERT from a Hugging Face directory, pre-trained or randomly initialised, trained
on the task's training examples with `transformers.Trainer` and scored on each scored split.

Tagging labels the first word piece of each word, as BERT did (Devlin et al. 2019, 5.3); the other pieces
and the special tokens get -100, which the loss ignores. A sentence longer than `max_length` pieces is
cut into consecutive windows of whole words, so every word is trained on and scored. Classification
encodes `[CLS] text [SEP]` or `[CLS] text [SEP] text_b [SEP]`, truncating the longer text first.

Randomness: the initial weights (all of them for the random model, the classifier head for the pre-trained
one) are drawn under `seeded(init seed)`; data order and dropout come from the Trainer's seed. Both are
derived from the run's seed, and are the same for the two models, so a seed's pair of runs differs only by
the initial encoder weights. Nothing leaks into the caller's random state.
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
from trainer.evaluate.data import Row, Sentence, TaskData
from trainer.evaluate.settings import EvalSettings

INITS = ("pretrained", "random")
EXTRA = "pip install 'corpusprep[eval]'"
IGNORE = -100  # the label transformers' losses skip


def require_transformers() -> Any:
    """transformers, or one line naming the extra that brings it (an optional dependency: the trainer
    itself needs only torch, numpy and pyarrow)."""
    try:
        import accelerate  # noqa: F401  transformers.Trainer needs it
        import transformers
    except ImportError as error:
        raise UsageError(f"trainer.evaluate needs transformers and accelerate ({error.name} is missing): "
                         f"{EXTRA}") from None  # fmt: skip
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


# ---------------------------------------------------------------- encoding


@dataclasses.dataclass
class Encoded:
    """Model inputs, one dict per window or row, and for tagging where each labelled piece's word is."""

    features: list[dict[str, list[int]]]
    words: list[list[tuple[int, int, int]]]  # per feature: (position, sentence, word) of each first piece
    truncated: int = 0  # rows cut to max_length (classification)


def encode_tagging(tokenizer, sentences: list[Sentence], label_ids: dict[str, int],
                   max_length: int) -> Encoded:  # fmt: skip
    flat = [w for s in sentences for w in s.words]
    # verbose=False: a word longer than the model (a URL) is cut below; transformers' "indexing errors"
    # warning about it would be a false alarm
    pieces = tokenizer(flat, add_special_tokens=False, verbose=False)["input_ids"] if flat else []
    room = max_length - 2  # [CLS] ... [SEP]
    encoded = Encoded([], [])
    k = 0
    for si, sentence in enumerate(sentences):
        window: list[tuple[int, list[int]]] = []  # (word index, pieces)
        used = 0
        for wi in range(len(sentence.words)):
            word = pieces[k][:room]  # a word longer than a window keeps its first pieces (its label's)
            k += 1
            if window and used + len(word) > room:
                _add_window(encoded, tokenizer, sentence, si, window, label_ids)
                window, used = [], 0
            window.append((wi, word))
            used += len(word)
        _add_window(encoded, tokenizer, sentence, si, window, label_ids)
    return encoded


def _add_window(encoded: Encoded, tokenizer, sentence: Sentence, si: int, window: list,
                label_ids: dict[str, int]) -> None:  # fmt: skip
    ids, labels, where = [tokenizer.cls_token_id], [IGNORE], []
    for wi, word in window:
        if word:  # a word the tokenizer drops entirely (only control characters) cannot be labelled
            label = sentence.labels[wi]
            if label:  # "": left out of the score (an unknown dev label under --on-error skip)
                where.append((len(ids), si, wi))
            labels += [label_ids.get(label, IGNORE)] + [IGNORE] * (len(word) - 1)
            ids += word
    ids.append(tokenizer.sep_token_id)
    labels.append(IGNORE)
    encoded.features.append({"input_ids": ids, "token_type_ids": [0] * len(ids),
                             "attention_mask": [1] * len(ids), "labels": labels})  # fmt: skip
    encoded.words.append(where)


def encode_classification(tokenizer, rows: list[Row], label_ids: dict[str, int], max_length: int) -> Encoded:
    texts = [r.text for r in rows]
    pairs = [r.text_b for r in rows] if rows and rows[0].text_b is not None else None
    batch = tokenizer(texts, pairs)
    long = [i for i, ids in enumerate(batch["input_ids"]) if len(ids) > max_length]
    if long:  # only these again, cut to fit: the longer text loses its last pieces first
        cut = tokenizer([texts[i] for i in long], [pairs[i] for i in long] if pairs else None,
                        truncation="longest_first", max_length=max_length)  # fmt: skip
        for j, i in enumerate(long):
            for key in batch:
                batch[key][i] = cut[key][j]
    encoded = Encoded([], [], truncated=len(long))
    for i, row in enumerate(rows):
        feature = {k: batch[k][i] for k in ("input_ids", "token_type_ids", "attention_mask")}
        encoded.features.append(feature | {"labels": label_ids[row.label]})
    return encoded


def encode(tokenizer, data: TaskData, examples: list, max_length: int) -> Encoded:
    label_ids = {label: i for i, label in enumerate(data.labels)}
    if data.kind == "tag":
        return encode_tagging(tokenizer, examples, label_ids, max_length)
    return encode_classification(tokenizer, examples, label_ids, max_length)


# ---------------------------------------------------------------- a run


def build_model(hf_dir: Path, data: TaskData, init: str, seed: int):
    """The model for the task: BERT from `hf_dir` with a fresh classifier head ("pretrained"), or the same
    architecture with every weight drawn fresh ("random": from the config alone; the checkpoint's weights
    are never read)."""
    transformers = require_transformers()
    cls = transformers.BertForTokenClassification if data.kind == "tag" else \
        transformers.BertForSequenceClassification  # fmt: skip
    config = transformers.BertConfig.from_pretrained(str(hf_dir), num_labels=len(data.labels))
    with seeded(sub_seed(seed, "init")), _quiet(transformers):
        if init == "pretrained":
            return cls.from_pretrained(str(hf_dir), config=config)
        return cls(config)


@contextlib.contextmanager
def _quiet(transformers) -> Iterator[None]:
    """No warning that the new classifier head is untrained (here that is the point) and no progress bar
    while weights load: the evaluation's own lines say what happens."""
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


def device_of(name: str) -> str:
    return ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name


def train(model, tokenizer, data: TaskData, encoded: Encoded, settings: EvalSettings, seed: int):
    """Fine-tune `model` in place with transformers.Trainer: AdamW, linear warm-up then decay, the
    settings' epochs (as a number of steps, so both models take exactly the same schedule)."""
    transformers = require_transformers()
    per_epoch = math.ceil(len(encoded.features) / settings.batch_size)
    steps = max(1, math.ceil(settings.epochs * per_epoch))
    collator = collator_for(transformers, tokenizer, data.kind)
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
        "dataloader_num_workers": 0,
    }
    # batches of similar lengths: less padding (transformers 5 names the option; 4.x had a flag)
    names = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    options |= {"train_sampling_strategy": "group_by_length"} if "train_sampling_strategy" in names else \
        {"group_by_length": True}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="corpusprep-finetune-") as scratch, seeded(seed), \
            _quiet(transformers):  # fmt: skip
        args = transformers.TrainingArguments(output_dir=scratch, **options)
        trainer = transformers.Trainer(model=model, args=args, train_dataset=encoded.features,
                                       data_collator=collator)  # fmt: skip
        trainer.remove_callback(transformers.PrinterCallback)  # its dict of run times on stdout
        trainer.train()
    return model.eval()


def collator_for(transformers, tokenizer, kind: str):
    if kind == "tag":
        return transformers.DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=8)
    return transformers.DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)


@torch.no_grad()
def predict(model, tokenizer, kind: str, encoded: Encoded, batch_size: int) -> list[np.ndarray]:
    """Label ids predicted for each feature (each position for tagging), in length-sorted batches."""
    transformers = require_transformers()
    collator = collator_for(transformers, tokenizer, kind)
    device = next(model.parameters()).device
    order = sorted(range(len(encoded.features)), key=lambda i: len(encoded.features[i]["input_ids"]))
    out: list[np.ndarray] = [np.empty(0)] * len(order)
    for start in range(0, len(order), batch_size):
        chosen = order[start : start + batch_size]
        batch = collator([{k: v for k, v in encoded.features[i].items() if k != "labels"} for i in chosen])
        logits = model(**{k: v.to(device) for k, v in batch.items()}).logits.argmax(-1).cpu().numpy()
        for row, i in enumerate(chosen):
            out[i] = logits[row]
    return out


def score(data: TaskData, split_examples: list, encoded: Encoded, predicted: list[np.ndarray]) -> dict:
    """Accuracy over words (tagging: a word is right when its first piece's label is; a word without a
    piece is wrong) or rows."""
    if data.kind == "classify":
        ids = {label: i for i, label in enumerate(data.labels)}
        hits = [int(p) == ids[r.label] for p, r in zip(predicted, split_examples, strict=True)]
        return {"accuracy": sum(hits) / len(hits), "n": len(hits), "truncated": encoded.truncated}
    right = 0
    for where, labels in zip(encoded.words, predicted, strict=True):
        for position, si, wi in where:
            right += data.labels[int(labels[position])] == split_examples[si].labels[wi]
    scored = sum(1 for s in split_examples for label in s.labels if label)
    return {"accuracy": right / scored, "n": scored}


def run(hf_dir: Path, data: TaskData, settings: EvalSettings, init: str, seed: int) -> dict[str, Any]:
    """Fine-tune one model (`init`: pretrained | random) with one seed; its score on every scored split."""
    transformers = require_transformers()
    with _quiet(transformers):
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(hf_dir))
    model = build_model(hf_dir, data, init, seed)
    model = train(model, tokenizer, data, encode(tokenizer, data, data.train.examples, settings.max_length),
                  settings, seed)  # fmt: skip
    scores = {}
    for name, split in data.scored.items():
        encoded = encode(tokenizer, data, split.examples, settings.max_length)
        predicted = predict(model, tokenizer, data.kind, encoded, settings.batch_size * 2)
        scores[name] = score(data, split.examples, encoded, predicted)
    return scores
