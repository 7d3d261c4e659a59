"""`none` (RoBERTa FULL-SENTENCES, Liu et al. 2019): masked LM only, rows of pieces `[CLS] piece [SEP]`,
packed from several documents by default (corpusprep.pair.pack)."""

from __future__ import annotations

from corpusprep.objectives.base import Objective
from corpusprep.pair.pack import make_rows, rows_table


def _fill(counts: dict, max_seq_length: int) -> float:
    """Mean share of a row's length that holds tokens, [CLS] and [SEP] included (1 - padding)."""
    capacity = counts.get("rows", 0) * max_seq_length
    filled = counts.get("piece_tokens", 0) + 2 * counts.get("pieces", 0)
    return round(filled / capacity, 4) if capacity else 0.0


class MaskedLMOnly(Objective):
    name, paper = "none", "RoBERTa (Liu et al. 2019)"
    packs, specials = True, 2
    row_counts = ("rows", "pieces", "piece_tokens")
    totals = ("rows", "pieces")
    shard_counts = ("pieces",)

    def resolve_options(self, options):
        # rows of pieces draw no target length: any value gives the same options and output
        defaults = type(options)
        return {"pack": True if options.pack is None else bool(options.pack),
                "short_seq_prob": defaults.short_seq_prob, "short_seq_by": defaults.short_seq_by}

    def rows(self, part, options, rng, dupe_pass):
        rows = make_rows(part, options.max_seq_length, bool(options.pack), rng, dupe_pass)
        return rows_table(part, rows), {
            "pairs": len(rows),  # the rows of the files, whatever the objective (`validate` counts them)
            "rows": len(rows),
            "pieces": len(rows.length),
            "piece_tokens": int(rows.length.sum()),
            "documents_used": part.num_documents,
            "documents_skipped": {},
        }

    def finish_split(self, counts, imbalance, max_seq_length):
        counts["fill"] = _fill(counts, max_seq_length)

    def finish_totals(self, stats, total, max_seq_length):
        stats["fill"] = _fill(total, max_seq_length)

    def summary(self, stats):
        return f"{stats['pairs']:,} rows ({stats.get('pieces', 0):,} pieces, {stats.get('fill', 0):.1%} full)"

    def describe(self, row):
        starts = row["document_starts"]
        return f"{len(starts)} piece{'' if len(starts) == 1 else 's'} (at {', '.join(map(str, starts))})"


OBJECTIVE = MaskedLMOnly()
