"""Objectives are modules registered in one table (corpusprep.objectives): the registry, what each objective
says of itself, and a toy objective registered from here that build-pairs and shard run end to end."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from corpusprep import objectives
from corpusprep.errors import UsageError
from corpusprep.objectives.base import ONE_SENTENCE, Objective
from corpusprep.objectives.sop import SentenceOrder
from corpusprep.pair.build import PairOptions, build_pairs
from corpusprep.read import ReadOptions
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from corpusprep.shard.validate import validate_shards
from tests.contexts import quiet
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert


class Toy(SentenceOrder):
    """Toy: SOP's rows under other names everywhere (label columns, counts), so that any place that still
    knew an objective by its name or columns would fail."""

    name, paper = "toy", "a test"
    pairs_label, shard_label = "is_toy", "toy_label"
    row_counts = ("toy_pairs", "plain_pairs", "sentences_unpaired")
    totals = ("toy_pairs",)
    shard_counts = ("plain", "toy")

    def rows(self, part, options, rng, dupe_pass):
        table, stats = super().rows(part, options, rng, dupe_pass)
        stats["toy_pairs"], stats["plain_pairs"] = stats.pop("swapped"), stats.pop("not_swapped")
        return table, stats

    def summary(self, stats):
        return f"{stats['pairs']} toy rows"


OBJECTIVE = Toy()


def test_every_registered_objective_is_its_module_and_the_registry_is_light():
    assert objectives.names() == ("nsp", "sop", "none") and objectives.DEFAULT == "nsp"
    for name in objectives.names():
        spec = objectives.objective(name)
        assert isinstance(spec, Objective) and spec.name == name
        assert set(spec.totals) <= set(spec.row_counts)
        assert len(spec.shard_counts) == (1 if spec.shard_label is None else 2)
        assert spec.specials == (2 if spec.packs else 3)
    assert objectives.objective(None).name == "nsp"  # pairs and shards from before objectives
    with pytest.raises(UsageError, match="unknown objective 'mlm': choose one of nsp, sop, none"):
        objectives.objective("mlm")
    code = "import sys, corpusprep.objectives, corpusprep.engine.records; print('numpy' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.strip() == "False", run.stderr


def test_objectives_fix_their_options_and_describe_their_rows():
    assert PairOptions(objective="none").pack is True
    assert PairOptions(objective="none", pack=False).pack is False
    assert PairOptions(objective="sop").pack is False
    with pytest.raises(UsageError, match="--pack applies to --objective none only, not nsp"):
        PairOptions(pack=True)
    with pytest.raises(UsageError, match=r"\(docs_per_partition\) 1: must be an integer from 2.*\(nsp"):
        PairOptions(docs_per_partition=1)
    assert PairOptions(objective="sop", docs_per_partition=1).docs_per_partition == 1
    assert objectives.objective("nsp").describe({"next_sentence_label": 1}) == "NotNext (B is random)"
    assert objectives.objective("none").describe({"document_starts": [0, 9]}) == "2 pieces (at 0, 9)"
    summary = objectives.objective("sop").summary({"pairs": 1200, "swapped": 600})
    assert summary == "1,200 SOP pairs (600 swapped)"


def test_an_objective_is_one_module_and_one_registry_line(monkeypatch, tmp_path):
    monkeypatch.setitem(objectives.REGISTRY, "toy", __name__)
    vocab = make_vocab(tmp_path / "vocab")
    corpus = write_bert(tmp_path / "corpus.txt", synthetic_documents(60, seed=3))
    pairs, shards = tmp_path / "pairs", tmp_path / "shards"
    options = PairOptions(objective="toy", max_seq_length=48, dupe_factor=2, validation_fraction=0.2)
    stats = build_pairs([corpus], vocab, pairs, options, ReadOptions(), context=quiet(1))
    assert stats["objective"] == "toy" and stats["pairs"] > 50
    assert stats["toy_pairs"] == sum(s["toy_pairs"] for s in stats["splits"].values()) > 0
    assert ONE_SENTENCE in stats["documents_skipped"]
    table = pq.read_table(pairs / "train")
    assert "is_toy" in table.column_names and 0 < sum(table["is_toy"].to_pylist()) < table.num_rows
    options = ShardOptions(num_shards=2, mask_strategy="span")
    manifest = build_shards(pairs, vocab, shards, options, context=quiet(1))
    assert manifest["objective"] == "toy" and manifest["totals"]["toy"] + manifest["totals"]["plain"] == sum(
        s["examples"] for s in manifest["splits"].values())
    assert validate_shards(shards) == []
    assert "toy_label" in pq.read_table(shards / "train").column_names
