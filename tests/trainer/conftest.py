"""Shard directories for trainer tests, built by the real stages from real text, once per session.

Text: the embedded demo corpus (docstrings of the standard library and installed packages, one document
per module, class or function; corpusprep/demo_corpus.py), written as JSONL. Then what `corpusprep run`
does: `train_vocab` (a small WordPiece vocab trained on the text) -> `build_pairs` -> `build_shards`.
About 5 s for the default size, most of it extracting the docstrings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from corpusprep.demo_corpus import iter_demo_documents
from corpusprep.pair.build import PairOptions, build_pairs
from corpusprep.read import ReadOptions
from corpusprep.shard.build import build_shards as shard_stage
from corpusprep.shard.options import ShardOptions
from corpusprep.tokenize.vocab import VocabOptions, train_vocab
from tests.contexts import quiet


def write_demo_text(path: Path, max_mb: float) -> Path:
    """The first `max_mb` MB of the demo corpus as JSONL {"id", "text"} (the demo pipeline's input)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for doc_id, text in iter_demo_documents(max_mb):
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    return path


def build_shards(
    out: Path,
    text: Path | None = None,
    *,
    max_mb: float = 1.0,
    vocab_size: int = 2000,
    max_seq_length: int = 64,
    dupe_factor: int = 2,
    validation_fraction: float = 0.2,
    num_shards: int = 4,
    seed: int = 0,
    objective: str = "nsp",
    mask_strategy: str = "token",
    masked_lm_prob: float = 0.15,
) -> Path:
    """SHARDS_DIR (out/shards) from `text` (default: the demo corpus, `max_mb` MB), vocab in out/vocab.

    Defaults: ~1,900 documents, 20% of them held out (by id hash), give ~9,000 train and ~2,200
    validation pairs of at most 64 tokens over a 2,000-token vocab, in 4 shards per split.
    """
    out.mkdir(parents=True, exist_ok=True)
    text = text or write_demo_text(out / "text.jsonl", max_mb)
    train_vocab([text], out / "vocab", VocabOptions(vocab_size=vocab_size))
    pair_options = PairOptions(
        max_seq_length=max_seq_length,
        dupe_factor=dupe_factor,
        validation_fraction=validation_fraction,
        seed=seed,
        objective=objective,
    )
    build_pairs([text], out / "vocab", out / "pairs", pair_options, ReadOptions(), context=quiet(1))
    shard_options = ShardOptions(
        num_shards=num_shards, row_group_size=256, seed=seed, mask_strategy=mask_strategy,
        masked_lm_prob=masked_lm_prob,
    )
    shard_stage(out / "pairs", out / "vocab", out / "shards", shard_options, context=quiet(1))
    return out / "shards"


def padded_rows(batch: dict) -> dict[str, torch.Tensor]:
    """A batch of `trainer.batch.collate` as padded rows [R, L], Hugging Face's form: input_ids,
    token_type_ids, position_ids, attention_mask, and labels (the original token where a prediction is due,
    -100 elsewhere). Past a row's end `rows` points at the padding, so the ids there are [PAD]."""
    rows = batch["rows"]
    padded = {k: batch[k][rows] for k in ("input_ids", "token_type_ids", "position_ids")}
    labels = torch.full((rows.numel(),), -100)
    labels[batch["slots"][batch["mlm_positions"]]] = batch["mlm_labels"]
    return padded | {"attention_mask": rows < batch["num_tokens"], "labels": labels.view(rows.shape)}


@pytest.fixture(scope="session")
def demo_text(tmp_path_factory) -> Path:
    """1 MB of the demo corpus as JSONL, shared by the shard fixtures."""
    return write_demo_text(tmp_path_factory.mktemp("demo_text") / "demo.jsonl", max_mb=1.0)


@pytest.fixture(scope="session")
def tiny_shards(tmp_path_factory, demo_text) -> Path:
    """SHARDS_DIR: 4 train + 4 validation shards of demo-corpus NSP pairs, length <= 64, vocab 2,000."""
    return build_shards(tmp_path_factory.mktemp("tiny_shards"), demo_text)
