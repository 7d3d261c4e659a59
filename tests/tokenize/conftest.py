"""Shared inputs for the vocab tests: a real corpus (the demo corpus), vocabs trained on it, the HF loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpusprep.demo_corpus import write_demo_corpus
from corpusprep.tokenize.vocab import VocabOptions, build_vocab


@pytest.fixture(scope="session")
def demo_jsonl(tmp_path_factory) -> Path:
    """1.5 MB of real English prose (Python's docstrings): ~2,000 documents."""
    path = tmp_path_factory.mktemp("corpus") / "demo.jsonl"
    write_demo_corpus(path, max_mb=1.5)
    return path


@pytest.fixture(scope="session")
def trained_vocab(tmp_path_factory, demo_jsonl) -> Path:
    out = tmp_path_factory.mktemp("vocab") / "uncased"
    build_vocab([demo_jsonl], out, VocabOptions(vocab_size=4000, reserved=10))
    return out


@pytest.fixture(scope="session")
def cased_vocab(tmp_path_factory, demo_jsonl) -> Path:
    out = tmp_path_factory.mktemp("vocab") / "cased"
    build_vocab([demo_jsonl], out, VocabOptions(vocab_size=4000, cased=True))
    return out


def hf_bert_tokenizer(vocab_txt: Path, lowercase: bool = True):
    """transformers' BertTokenizerFast built from vocab.txt alone (never from our tokenizer.json).

    transformers 5 takes the file as `vocab=` and silently ignores `vocab_file=` (leaving a 5-token vocab), so
    pick the keyword by version and check the size."""
    transformers = pytest.importorskip("transformers")
    major = int(transformers.__version__.split(".")[0])
    keyword = "vocab" if major >= 5 else "vocab_file"
    tokenizer = transformers.BertTokenizerFast(**{keyword: str(vocab_txt)}, do_lower_case=lowercase)
    lines = len(Path(vocab_txt).read_text(encoding="utf-8").splitlines())
    assert len(tokenizer) == lines, "BertTokenizerFast did not load the vocab file"
    return tokenizer
