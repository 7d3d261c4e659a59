"""Spill files between the passes: groups of different widths read back, each example to its shuffled row."""

from __future__ import annotations

import numpy as np

from corpusprep.engine.rng import rng_for
from corpusprep.mask import Masking, MaskVocab, examples_from_pairs, mask_examples
from corpusprep.shard.spill import read_groups, write_group
from corpusprep.shard.table import to_table
from corpusprep.tokenize import VocabInfo
from tests.shard.realistic import make_pairs


def test_groups_round_trip_into_shuffled_rows(tmp_path, stream, vocab_dir):
    vocab = VocabInfo.load(vocab_dir)
    mask_vocab = MaskVocab.from_vocab(vocab)
    batches = []
    for seed, max_len in ((1, 128), (2, 40), (3, 64)):  # different widths and prediction counts
        examples = examples_from_pairs(
            make_pairs(stream, 300, seed=seed, max_seq_length=max_len), vocab=mask_vocab,
            max_seq_length=max_len, source="t",
        )
        whole_words = Masking(strategy="whole-word")
        batches.append(mask_examples(examples, mask_vocab, rng_for(0, "spill", seed), masking=whole_words))
    written = [batch.take(slice(0, 200)) for batch in batches]
    written += [batches[0].take(slice(0, 0)), batches[1].take(slice(200, 300))]  # an empty group, a second
    path = tmp_path / "part.spill"
    with open(path, "wb") as f:
        groups = [(str(path), write_group(f, group)) for group in written]
    rows = np.random.default_rng(0).permutation(700)
    masked = read_groups(groups, rows, vocab.token_dtype, vocab.pad_id)
    assert len(masked) == 700 and masked.examples.ids.shape[1] == 128
    # Row rows[i] holds the i-th example written: undoing the shuffle gives the groups back in order.
    back, offset = to_table(masked.take(rows)), 0
    for group in written:
        assert back.slice(offset, len(group)).equals(to_table(group))
        offset += len(group)
    assert masked.counts() == {k: sum(group.counts()[k] for group in written) for k in masked.counts()}
