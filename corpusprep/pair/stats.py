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
