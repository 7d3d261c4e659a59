"""One extractive question answering run: `AutoModelForQuestionAnswering` (BERT's start and end vectors on
top of the encoder) from a Hugging Face directory, pre-trained or randomly initialised, fine-tuned on a
SQuAD training file with `transformers.Trainer` (finetune.train: the same schedule, seeds and determinism as
the other task kinds) and scored on each scored file by the official SQuAD rules.

v2.0's no-answer threshold is chosen on dev (squad_metric.choose_null_threshold) and used as it is on test:
the dev figure is at its own best threshold, as BERT's and the SQuAD leaderboard's dev figures are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from corpusprep.errors import UsageError
from trainer.evaluate import finetune, squad_metric
from trainer.evaluate.squad import SquadSplit
from trainer.evaluate.squad_features import MAX_ANSWER_LENGTH, QAFeatures, check_windows, decode, encode

KIND = "qa"


def load_tokenizer(hf_dir: Path):
    transformers = finetune.require_transformers()
    with finetune._quiet(transformers):
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(hf_dir))
    if not tokenizer.is_fast:  # offsets map spans back to the context: only a fast tokenizer has them
        raise UsageError(f"{hf_dir}: question answering needs a fast tokenizer (tokenizer.json)")
    return tokenizer


def build_model(hf_dir: Path, init: str, seed: int):
    """BERT from `hf_dir` with a fresh span head ("pretrained"), or the architecture with every weight drawn
    fresh ("random"), under the run's init seed (finetune.build_model's rules)."""
    transformers = finetune.require_transformers()
    config = transformers.AutoConfig.from_pretrained(str(hf_dir))
    cls = transformers.AutoModelForQuestionAnswering
    with finetune.seeded(finetune.sub_seed(seed, "init")), finetune._quiet(transformers):
        if init == "pretrained":
            return cls.from_pretrained(str(hf_dir), config=config)
        return cls.from_config(config)


def train(model, tokenizer, features: QAFeatures, settings, seed: int):
    """Fine-tune in place on windows labelled with start and end positions (finetune.train: AdamW, warm-up
    then linear decay, the settings' epochs as steps; padding by DataCollatorWithPadding)."""
    return finetune.train(model, tokenizer, SimpleNamespace(kind=KIND), features, settings, seed)


@torch.no_grad()
def predict(model, tokenizer, features: QAFeatures, batch_size: int) -> tuple[list, list]:
    """Start and end logits of each window (as long as it is: padding dropped), in length-sorted batches."""
    transformers = finetune.require_transformers()
    collator = transformers.DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)
    device = next(model.parameters()).device
    inputs = ("input_ids", "token_type_ids", "attention_mask")
    order = sorted(range(len(features.features)), key=lambda f: len(features.features[f]["input_ids"]))
    starts: list[np.ndarray] = [np.empty(0)] * len(order)
    ends: list[np.ndarray] = [np.empty(0)] * len(order)
    for first in range(0, len(order), batch_size):
        chosen = order[first : first + batch_size]
        batch = collator([{k: features.features[f][k] for k in inputs} for f in chosen])
        output = model(**{k: v.to(device) for k, v in batch.items()})
        start, end = output.start_logits.float().cpu().numpy(), output.end_logits.float().cpu().numpy()
        for row, f in enumerate(chosen):
            n = len(features.features[f]["input_ids"])
            starts[f], ends[f] = start[row, :n], end[row, :n]
    return starts, ends


@dataclass
class Scored:
    """One split's answers and scores (squad_metric.score's, with the null threshold used, v2.0)."""

    answers: dict[str, str]
    scores: dict[str, Any]
    null_odds: dict[str, float] | None = None


def answer(split: SquadSplit, spans: dict[str, str], null_odds: dict[str, float],
           threshold: float | None) -> Scored:  # fmt: skip
    """v1.1: the best spans. v2.0: "" where the null odds exceed `threshold` (None: choose it here, on
    this split, as on dev)."""
    golds = split.golds()
    if split.version == "1.1":
        return Scored(spans, squad_metric.score(golds, spans, "1.1"))
    if threshold is None:
        threshold = squad_metric.choose_null_threshold(golds, spans, null_odds)
    answers = squad_metric.apply_null_threshold(spans, null_odds, threshold)
    scores = squad_metric.score(golds, answers, "2.0") | {"null_threshold": threshold}
    return Scored(answers, scores, null_odds)


@dataclass
class QARun:
    """A run's scored splits, and what its training windows left out (counted, never silent)."""

    splits: dict[str, Scored]
    train: dict[str, int]  # windows; questions cut to their first pieces; answers no window holds whole


def run(hf_dir: Path, train_split: SquadSplit, scored: dict[str, SquadSplit], settings, init: str,
        seed: int, doc_stride: int | None = None,
        max_answer_length: int = MAX_ANSWER_LENGTH) -> QARun:  # fmt: skip
    """Fine-tune one model (`init`: pretrained | random) with one seed on `train_split`; each scored split
    ("dev" first: v2.0's threshold is chosen there) answered and scored. `settings`: the EvalSettings
    fields finetune.train reads (epochs, batch_size, lr, warmup, weight_decay, device) and max_length."""
    stride = check_windows(settings.max_length, doc_stride, max_answer_length)
    config = finetune.require_transformers().AutoConfig.from_pretrained(str(hf_dir))
    positions = config.max_position_embeddings
    if settings.max_length > positions:
        raise UsageError(f"max_length={settings.max_length}: the model at {hf_dir} takes at most {positions} "
                         "word pieces")  # fmt: skip
    tokenizer = load_tokenizer(hf_dir)
    model = build_model(hf_dir, init, seed)
    encoded = encode(tokenizer, train_split.examples, settings.max_length, stride, labels=True)
    model = train(model, tokenizer, encoded, settings, seed)
    counts = {"windows": len(encoded.features), "questions_cut": encoded.cut_questions,
              "answers_unreachable": encoded.unreachable}  # fmt: skip
    results: dict[str, Scored] = {}
    threshold = None
    for name, split in scored.items():
        windows = encode(tokenizer, split.examples, settings.max_length, stride, labels=False)
        starts, ends = predict(model, tokenizer, windows, settings.batch_size * 2)
        spans, odds = decode(split.examples, windows, starts, ends, max_answer_length)
        results[name] = answer(split, spans, odds, threshold)
        results[name].scores |= {"windows": len(windows.features), "questions_cut": windows.cut_questions}
        if split.version == "2.0" and threshold is None:
            threshold = results[name].scores["null_threshold"]
    return QARun(results, counts)
