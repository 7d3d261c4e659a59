"""Dynamic masking (`remask_table`): shard rows masked afresh by the same rule as `shard`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.engine.files import read_json
from corpusprep.engine.rng import rng_for
from corpusprep.mask import MaskVocab, num_predictions, strategies
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from corpusprep.shard.schema import shard_schema
from corpusprep.shard.table import count_table, examples_from_shard, remask_table
from corpusprep.shard.validate import check_shard_rows
from corpusprep.tokenize import VocabInfo
from tests.contexts import quiet


@pytest.fixture(scope="module", params=["nsp", "sop", "none"])
def static(request, tmp_path_factory, pairs_dir, sop_pairs_dir, none_pairs_dir, vocab_dir):
    """Shards of each objective, span-masked at 30%, read back whole."""
    pairs = {"nsp": pairs_dir, "sop": sop_pairs_dir, "none": none_pairs_dir}[request.param]
    out = tmp_path_factory.mktemp(f"static-{request.param}")
    options = ShardOptions(num_shards=1, mask_strategy="span", masked_lm_prob=0.3, max_predictions_per_seq=30)
    build_shards(pairs, vocab_dir, out, options, context=quiet(1))
    table = pa.concat_tables([pq.read_table(p) for p in sorted(out.glob("*/*.parquet"))])
    return request.param, table, read_json(out / "manifest.json")


@pytest.mark.parametrize("strategy", strategies.names())
def test_dynamic_masking_follows_the_static_rule(static, vocab_dir, strategy):
    objective, table, manifest = static
    vocab = VocabInfo.load(vocab_dir)
    mask_vocab = MaskVocab.from_vocab(vocab)
    options = manifest["options"]
    again = remask_table(table, mask_vocab, rng_for(1, "dynamic"), objective=objective,
                         masked_lm_prob=options["masked_lm_prob"],
                         max_predictions_per_seq=options["max_predictions_per_seq"], strategy=strategy)
    assert again.schema.equals(shard_schema(vocab.token_dtype, objective))
    # Same rows before masking; a valid shard by every check `validate` makes (rule, layout, budget).
    before = examples_from_shard(table, vocab.pad_id, objective)
    after = examples_from_shard(again, vocab.pad_id, objective)
    assert np.array_equal(before.ids, after.ids) and np.array_equal(before.label, after.label)
    assert check_shard_rows(again, {**manifest, "options": {**options, "mask_strategy": strategy}}) == []
    static_counts = count_table(table, vocab.mask_id, objective)
    counts = count_table(again, vocab.mask_id, objective)
    masking = ("masked_tokens", "mask_token", "random_token", "kept_token")
    assert {k: v for k, v in counts.items() if k not in masking} == {
        k: v for k, v in static_counts.items() if k not in masking}  # examples, labels or pieces, tokens
    budget = num_predictions(before.lengths, 0.3, 30).sum()
    assert abs(counts["masked_tokens"] / budget - 1) < 0.002 and counts["masked_tokens"] <= budget
    shares = np.array([counts[k] for k in masking[1:]]) / counts["masked_tokens"]
    assert np.allclose(shares, [0.8, 0.1, 0.1], atol=0.03)
    if objective == "none":
        assert again["document_starts"].equals(table["document_starts"])
    if strategy == "span":  # the same rule as the static shards: the same rate, other positions
        assert abs(counts["masked_tokens"] / static_counts["masked_tokens"] - 1) < 0.001
        assert not again["masked_lm_positions"].equals(table["masked_lm_positions"])
