"""The stats of a pairs directory (stats.json): the read, tokenize and pairs stages' counts per split and in
total, in the objective's terms (`Objective.row_counts`, `totals`, `skipped`, `finish_split`)."""

from __future__ import annotations

from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.executor import merge_stats
from corpusprep.objectives import objective as objective_spec
from corpusprep.objectives.base import NO_SENTENCES
from corpusprep.pair.options import PairOptions
from corpusprep.pair.schema import SPLITS
from corpusprep.tokenize import VocabInfo

STATS_VERSION = 1


def assemble_stats(
    read, token_stats, pair_stats, partitions, identity, vocab: VocabInfo, options: PairOptions
) -> dict[str, Any]:
    spec = objective_spec(options.objective)
    splits = {}
    for split in SPLITS:
        tok, pairs = token_stats.get(split, {}), dict(pair_stats.get(split, {}))
        imbalance = pairs.pop("file_imbalance", [])
        documents = read["documents"][split]
        used = pairs.pop("documents_used", 0)
        skipped = {NO_SENTENCES: tok.get("skipped", {}).get(NO_SENTENCES, 0)}
        skipped |= pairs.get("documents_skipped", {})  # sop: one-sentence documents
        skipped = spec.skipped(documents, used, skipped)
        splits[split] = {
            "documents": documents,
            "documents_used": used,
            "documents_skipped": skipped,
            "partitions": partitions[split],
            **{
                k: tok.get(k, 0)
                for k in (
                    "sentences",
                    "empty_sentences",
                    "tokens",
                    "sentences_truncated",
                    "sentence_tokens_truncated",
                )
            },
            **{k: pairs.get(k, 0) for k in ("files", "pairs", *spec.row_counts)},
        }
        spec.finish_split(splits[split], imbalance, options.max_seq_length)
    total = merge_stats(splits.values())
    stats = {
        "stats_version": STATS_VERSION,
        "identity": identity,
        "options": identity["options"],
        "objective": spec.name,
        "vocab": {"sha256": vocab.sha256, "size": vocab.size, "directory": storage.url(vocab.directory)},
        "read": read["read"],
        "documents": total["documents"],
        "documents_used": total["documents_used"],
        "documents_skipped": total["documents_skipped"],
        "pairs": total["pairs"],
        **{k: total[k] for k in spec.totals},
    }
    spec.finish_totals(stats, total, options.max_seq_length)
    return {**stats, "splits": splits}


def imbalance_warning(stats: dict[str, Any], where: str) -> str | None:
    """The objective's warning on finished pairs stats (nsp: its 50/50 is off), if any."""
    return objective_spec(stats.get("objective")).warning(stats, where)


# More of the text's tokens than this cut off over-long sentences: say so. Wikipedia loses 0.3% at
# --max-seq-length 128 (no warning) and 2.6% at 64 (a warning: a choice worth knowing the price of).
TRUNCATION_WARN_SHARE = 0.01


def loss_warnings(stats: dict[str, Any], where: str) -> list[str]:
    """What a build lost that its user would want to know, one line each, from finished pairs stats: a split
    asked for that has no rows (10 books at the default --validation-fraction give no validation document),
    and sentences cut at the row length past TRUNCATION_WARN_SHARE of the tokens."""
    options, splits = stats["options"], stats["splits"]
    fraction, length = options["validation_fraction"], options["max_seq_length"]
    warnings = []
    for split, counts in splits.items():
        if counts["pairs"] or (split == "validation" and not fraction):
            continue
        if counts["documents"]:
            skipped = ", ".join(f"{n:,} {why}" for why, n in sorted(counts["documents_skipped"].items()) if n)
            warnings.append(f"{where}: the {split} split has no rows: its {counts['documents']:,} documents "
                            f"gave none (skipped: {skipped or 'none'})")
            continue
        share = fraction if split == "validation" else 1 - fraction
        warnings.append(f"{where}: the {split} split is empty: none of the {stats['documents']:,} documents "
                        f"fell in it (--validation-fraction {fraction:g}: {share * stats['documents']:.2g} "
                        "expected); pass a larger --validation-fraction, or split the text into more "
                        "documents")
    total = {key: sum(counts[key] for counts in splits.values())
             for key in ("tokens", "sentence_tokens_truncated", "sentences", "sentences_truncated")}
    cut, long = total["sentence_tokens_truncated"], total["sentences_truncated"]
    if cut > TRUNCATION_WARN_SHARE * (cut + total["tokens"]):
        most = length - objective_spec(stats["objective"]).specials
        share, long_share = cut / (cut + total["tokens"]), long / max(1, total["sentences"])
        warnings.append(f"{where}: {share:.1%} of the text's tokens ({cut:,}) were cut: {long:,} sentences "
                        f"({long_share:.1%}) are longer than a row holds ({most} tokens at --max-seq-length "
                        f"{length}) and keep their first {most}; a longer --max-seq-length keeps them, as "
                        "may a splitter that finds their ends (--splitter, --line-breaks)")
    return warnings
