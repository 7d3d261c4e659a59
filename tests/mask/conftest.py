"""Fixtures of the masking tests: a realistic vocab and pairs stream (tests/shard/realistic.py)."""

import pytest

from corpusprep.mask import MaskVocab
from corpusprep.tokenize import VocabInfo
from tests.shard.realistic import stream, vocab_dir  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def vocab(vocab_dir) -> VocabInfo:  # noqa: F811
    return VocabInfo.load(vocab_dir)


@pytest.fixture(scope="module")
def mask_vocab(vocab) -> MaskVocab:
    return MaskVocab.from_vocab(vocab)
