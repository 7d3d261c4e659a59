"""`nsp` (BERT, Devlin et al. 2019): `[CLS] A [SEP] B [SEP]`, B the next segment or one from another document,
50/50; label 1 = NotNext (`is_random_next` in pairs, `next_sentence_label` in shards)."""

from __future__ import annotations

from typing import Any

from corpusprep.errors import DataError
from corpusprep.objectives.base import NO_PARTNER, NO_SENTENCES, PAIR_COUNTS, Objective, pair_stats
from corpusprep.pair.instances import make_pairs, pairs_table


class NextSentence(Objective):
    name, paper = "nsp", "BERT (Devlin et al. 2019)"
    pairs_label, shard_label = "is_random_next", "next_sentence_label"
    task_title = "next-sentence"
    min_partition_docs = 2  # a NotNext B comes from another document of the partition
    row_counts = ("is_next", "not_next", *PAIR_COUNTS)
    totals = ("is_next", "not_next")
    shard_counts = ("is_next", "not_next")

    def rows(self, part, options, rng, dupe_pass):
        pairs = make_pairs(part, options.max_seq_length, options.short_seq_prob, rng, options.short_seq_by)
        stats = pair_stats(pairs, "not_next", "is_next")
        return pairs_table(part, pairs), {**stats, "documents_used": part.num_documents,
                                          "documents_skipped": {}}

    def check_corpus(self, token_stats, usable_train, where, skips):
        if usable_train < 2:
            raise DataError(
                f"{where}: {usable_train} training document(s) with sentences ({skips}); NSP pairs need at "
                "least two (a NotNext segment comes from another document; --objective sop or none works "
                "with one)"
            )

    def skipped(self, documents, used, skipped):
        return {**skipped, NO_PARTNER: documents - used - skipped[NO_SENTENCES]}

    def warning(self, stats: dict[str, Any], where: str) -> str | None:
        """NSP's 50/50 is exact only where documents have a B to give: a corpus of one-sentence documents
        forces NotNext (the other half is owed and never paid). Say so when the split is off by more than
        1%."""
        if not stats["pairs"]:
            return None
        share = stats["not_next"] / stats["pairs"]
        if abs(share - 0.5) <= 0.01:
            return None
        return (f"{where}: {share:.1%} of {stats['pairs']:,} pairs are NotNext, not 50%: too few documents "
                "have two sentences or more (a one-sentence document can only give NotNext pairs)")

    def summary(self, stats):
        return f"{stats['pairs']:,} NSP pairs ({stats.get('not_next', 0):,} NotNext)"

    def describe(self, row):
        return "NotNext (B is random)" if row["next_sentence_label"] else "IsNext"


OBJECTIVE = NextSentence()
