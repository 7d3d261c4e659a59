"""Masking strategies are modules registered in one table (corpusprep.mask.strategies): the registry, the one
resolver of the shard options' strategy, and a toy strategy registered from here that `shard` runs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from corpusprep.errors import UsageError
from corpusprep.mask import strategies
from corpusprep.mask.strategies.base import Strategy
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from corpusprep.shard.validate import validate_shards
from corpusprep.tokenize import VocabInfo
from tests.contexts import quiet
from tests.shard.realistic import write_pairs_dir


class FirstTokens(Strategy):
    """Toy: each row's first tokens, as many as its budget."""

    name, whole_words, exact_budget = "first", False, True

    def choose(self, start, candidate, budget, rng):
        rank = np.cumsum(start, axis=1)  # 1 at a row's first word start, 2 at its second...
        return (start & (rank <= budget[:, None])).ravel(), None


STRATEGY = FirstTokens()


def test_every_registered_strategy_is_its_module_and_the_registry_is_light():
    assert strategies.names() == ("token", "whole-word", "span") and strategies.DEFAULT == "token"
    for name in strategies.names():
        strategy = strategies.get(name)
        assert isinstance(strategy, Strategy) and strategy.name == name
    assert [strategies.get(n).whole_words for n in strategies.names()] == [False, True, True]
    with pytest.raises(UsageError, match="unknown mask strategy 'spans'"):
        strategies.get("spans")
    code = "import sys, corpusprep.mask.strategies, corpusprep.shard.options; print('numpy' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.strip() == "False", run.stderr


@pytest.mark.parametrize(("options", "expected"), [
    ({}, "token"),
    ({"mask_strategy": None, "whole_word_mask": False}, "token"),
    ({"whole_word_mask": True}, "whole-word"),  # manifests from before strategies
    ({"mask_strategy": "whole-word", "whole_word_mask": True}, "whole-word"),
    ({"mask_strategy": "span", "whole_word_mask": False}, "span"),
])
def test_one_resolver_for_options_and_manifests(options, expected):
    assert strategies.resolve(options) == expected
    if "mask_strategy" in options:  # ShardOptions resolves through it, and records both fields
        shard = ShardOptions(**options)
        assert (shard.mask_strategy, shard.whole_word_mask) == (expected, expected == "whole-word")


def test_resolver_refuses_unknown_and_contradicting_names():
    with pytest.raises(UsageError, match="--mask-strategy must be one of token, whole-word, span, not 'x'"):
        strategies.resolve({"mask_strategy": "x"})
    with pytest.raises(UsageError, match="contradicts --mask-strategy span"):
        strategies.resolve({"mask_strategy": "span", "whole_word_mask": True})


def test_a_strategy_is_one_module_and_one_registry_line(monkeypatch, tmp_path, stream, vocab_dir):
    monkeypatch.setitem(strategies.REGISTRY, "first", __name__)
    pairs = write_pairs_dir(tmp_path / "pairs", stream, {"train": [300], "validation": [100]})
    out = tmp_path / "shards"
    options = ShardOptions(mask_strategy="first", num_shards=2)
    manifest = build_shards(pairs, vocab_dir, out, options, context=quiet(1))
    assert manifest["options"]["mask_strategy"] == "first"
    assert validate_shards(out) == []  # the manifest check knows it, and the budget is met exactly
    sep_id = VocabInfo.load(vocab_dir).sep_id
    table = pq.read_table(out / "train", columns=["input_ids", "masked_lm_positions"])
    for ids, positions in zip(*(table[c].to_pylist() for c in table.column_names), strict=True):
        tokens = [j for j in range(1, len(ids)) if ids[j] != sep_id]  # every candidate: no [PAD] in a row
        assert positions == tokens[: len(positions)] and positions
