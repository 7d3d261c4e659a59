"""`sop` (ALBERT, Lan et al. 2020): `[CLS] A [SEP] B [SEP]`, A and B consecutive segments of one document,
swapped in exactly half of the rows; label 1 = swapped (`is_swapped`, `sentence_order_label`)."""

from __future__ import annotations

import numpy as np

from corpusprep.errors import DataError
from corpusprep.objectives.base import ONE_SENTENCE, PAIR_COUNTS, Objective, pair_stats
from corpusprep.pair.instances import make_sop_pairs, pairs_table


class SentenceOrder(Objective):
    name, paper = "sop", "ALBERT (Lan et al. 2020)"
    pairs_label, shard_label = "is_swapped", "sentence_order_label"
    task_title = "sentence-order"
    row_counts = ("swapped", "not_swapped", *PAIR_COUNTS, "sentences_unpaired")
    totals = ("swapped", "not_swapped")
    shard_counts = ("in_order", "swapped")

    def rows(self, part, options, rng, dupe_pass):
        pairs, unpaired = make_sop_pairs(part, options.max_seq_length, options.short_seq_prob, rng,
                                         options.short_seq_by)
        used = int(np.count_nonzero(np.diff(part.doc_offsets) >= 2))
        return pairs_table(part, pairs, self.name), {
            **pair_stats(pairs, "swapped", "not_swapped"),
            "sentences_unpaired": unpaired,
            "documents_used": used,
            "documents_skipped": {ONE_SENTENCE: part.num_documents - used},
        }

    def check_corpus(self, token_stats, usable_train, where, skips):
        if not token_stats.get("train", {}).get("multi_sentence_documents"):
            raise DataError(f"{where}: no training document with two sentences or more ({skips}); SOP pairs "
                            "need one (A and B are consecutive segments of one document)")
        super().check_corpus(token_stats, usable_train, where, skips)

    def summary(self, stats):
        return f"{stats['pairs']:,} SOP pairs ({stats.get('swapped', 0):,} swapped)"

    def describe(self, row):
        return "swapped (B comes before A)" if row["sentence_order_label"] else "in order"


OBJECTIVE = SentenceOrder()
