"""Realistic test inputs without ../shared: a WordPiece vocab trained on the standard library's docstrings
(real English, real `##` pieces), and NSP pairs cut from the encoded text with BERT's length profile."""

from __future__ import annotations

import importlib
import inspect
import re
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.engine.artifact import Artifact
from corpusprep.engine.files import write_json
from corpusprep.engine.outputs import OUTPUT_KINDS
from corpusprep.pair.schema import pairs_schema
from tests.pair.helpers import seal_vocab

MODULES = (
    "argparse", "asyncio", "collections", "configparser", "csv", "datetime", "decimal", "email.message",
    "fractions", "ftplib", "http.client", "imaplib", "inspect", "json", "logging", "mailbox", "os", "pathlib",
    "pickle", "shutil", "smtplib", "socket", "subprocess", "tarfile", "threading", "typing", "unittest",
    "urllib.request", "zipfile",
)


@cache
def sentences() -> tuple[str, ...]:
    """A few thousand English sentences from docstrings."""
    found: list[str] = []
    for name in MODULES:
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module):
            doc = inspect.getdoc(obj) if callable(obj) or inspect.ismodule(obj) else None
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join((doc or "").split())):
                if len(sentence) > 20:
                    found.append(sentence)
    return tuple(dict.fromkeys(found))


def train_vocab(directory: Path, vocab_size: int = 3000) -> Path:
    """vocab.txt + tokenizer.json in `directory`: specials first, a few [unusedN] slots, then WordPiece."""
    from tokenizers import BertWordPieceTokenizer

    specials = ["[PAD]", *(f"[unused{i}]" for i in range(5)), "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = BertWordPieceTokenizer(lowercase=True)
    tokenizer.train_from_iterator(sentences(), vocab_size=vocab_size, special_tokens=specials)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save_model(str(directory))
    tokenizer.save(str(directory / "tokenizer.json"))
    return seal_vocab(directory)


def token_stream(vocab_dir: Path) -> np.ndarray:
    """Every sentence encoded (no specials) and concatenated."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(vocab_dir / "tokenizer.json"))
    encoded = tokenizer.encode_batch(list(sentences()), add_special_tokens=False)
    return np.concatenate([np.asarray(e.ids, np.uint16) for e in encoded])


def make_pairs(stream: np.ndarray, n: int, seed: int, max_seq_length: int = 128) -> pa.Table:
    """`n` pairs like Google's: target length max_seq_length - 3 (10%: shorter), A/B split at random;
    B continues A (IsNext) or comes from elsewhere (NotNext) half the time."""
    rng = np.random.default_rng(seed)  # test data only; the code under test draws from rng_for
    room = max_seq_length - 3
    total = np.where(rng.random(n) < 0.1, rng.integers(2, room + 1, n), room)
    len_a = rng.integers(1, total)
    len_b = total - len_a
    start_a = rng.integers(0, len(stream) - 2 * room, n)
    random_next = rng.random(n) < 0.5
    start_b = np.where(random_next, rng.integers(0, len(stream) - room, n), start_a + len_a)

    def segments(starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        index = np.arange(offsets[-1]) + np.repeat(starts - offsets[:-1], lengths)
        return pa.ListArray.from_arrays(offsets, pa.array(stream[index]))

    doc = pa.array([f"doc:{i // 7}" for i in range(n)])
    return pa.Table.from_arrays(
        [
            segments(start_a, len_a), segments(start_b, len_b), pa.array(random_next), doc,
            pa.array(np.arange(n) % 7, pa.uint32()), doc, pa.array(np.arange(n) % 7 + 1, pa.uint32()),
        ],
        schema=pairs_schema(),
    )


def write_pairs_dir(directory: Path, stream: np.ndarray, sizes: dict[str, list[int]], seed: int = 0) -> Path:
    """A pairs directory as build-pairs writes it: {split}/part-PPPPP-d0.parquet and stats.json."""
    counts = {}
    for split, parts in sizes.items():
        for p, n in enumerate(parts):
            table = make_pairs(stream, n, seed=seed * 1000 + p + (500 if split == "validation" else 0))
            (directory / split).mkdir(parents=True, exist_ok=True)
            pq.write_table(table, directory / split / f"part-{p:05d}-d0.parquet")
            counts[split] = counts.get(split, 0) + n
    stats = {"pairs": sum(counts.values()), "splits": {s: {"pairs": n} for s, n in counts.items()}}
    write_json(directory / "stats.json", {**stats, "max_seq_length": 128})
    owned = [p.relative_to(directory).as_posix() for p in sorted(directory.rglob("*")) if p.is_file()]
    with Artifact(directory, OUTPUT_KINDS["pairs"].adopting(), {"test_seed": seed}, quiet=True) as artifact:
        artifact.commit(files=owned)  # as build-pairs finishes: the manifest owns every file
    return directory


# Fixtures, imported by tests/mask/conftest.py and tests/shard/conftest.py.
PAIR_SIZES = {"train": [3000, 2500, 2000], "validation": [700]}


@pytest.fixture(scope="session")
def vocab_dir(tmp_path_factory) -> Path:
    return train_vocab(tmp_path_factory.mktemp("vocab"))


@pytest.fixture(scope="session")
def stream(vocab_dir) -> np.ndarray:
    return token_stream(vocab_dir)


@pytest.fixture(scope="session")
def pairs_dir(tmp_path_factory, stream) -> Path:
    return write_pairs_dir(tmp_path_factory.mktemp("pairs"), stream, PAIR_SIZES)
