"""Shared by the Hugging Face interop tests: checkpoints written as the trainer writes them, models whose
every weight matters, and `from_pretrained` with transformers' log and warnings captured."""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import asdict
from pathlib import Path

import torch

from trainer.model import BertConfig, BertForPreTraining

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@contextlib.contextmanager
def one_thread():
    """Tiny models on a shared CI box: a second intra-op thread only adds contention (10x slower measured
    at load 8 on 2 cores), and pytest-xdist already runs one worker per core."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def random_model(config: BertConfig, seed: int = 0) -> BertForPreTraining:
    """BERT's init, then every tensor perturbed: non-zero biases and non-unit LayerNorms, so a weight that
    is dropped, transposed or swapped (query <-> key, decoder bias) changes the logits."""
    torch.manual_seed(seed)
    model = BertForPreTraining(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model.eval()


def write_checkpoint(directory: Path, model: BertForPreTraining, train: dict | None = None,
                     state: dict | None = None) -> Path:
    """weights.safetensors + config.json as trainer/checkpoint.py writes them (`state`: other weights)."""
    from trainer.checkpoint import save_model

    directory.mkdir(parents=True, exist_ok=True)
    record = {"model": asdict(model.config), "train": train or {}}
    save_model(directory, model.state_dict() if state is None else state, record)
    return directory


def write_vocab(directory: Path, size: int) -> Path:
    """A vocab.txt of `size` tokens: the specials, then lowercase 'words'."""
    directory.mkdir(parents=True, exist_ok=True)
    words = [f"w{i}" for i in range(size - len(SPECIALS))]
    (directory / "vocab.txt").write_text("\n".join(SPECIALS + words) + "\n")
    return directory


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def load_with_log(cls, path: Path, **kwargs):
    """(model, loading info, every transformers warning and every Python warning)."""
    logger = logging.getLogger("transformers")  # the library's root logger: it does not propagate
    handler, level = _Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)  # where missing/unexpected/new weights are reported
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model, info = cls.from_pretrained(str(path), output_loading_info=True, **kwargs)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return model.eval(), info, handler.messages + [str(w.message) for w in caught]


def complaints(messages: list[str]) -> list[str]:
    """Messages that mean weights were not loaded as saved."""
    bad = ("newly initialized", "not initialized", "missing", "unexpected", "mismatch", "not used")
    return [m for m in messages if any(b in m.lower() for b in bad)]
