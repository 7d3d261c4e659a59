"""What an objective is: its rows and their schema, its counts, its checks and its words, asked by every stage
instead of branching on its name."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from corpusprep.errors import DataError, UsageError

NO_SENTENCES = "no_sentences"  # every objective: a document without a sentence gives no row
NO_PARTNER = "no_partner_document"  # nsp: the document's partition has no other document
ONE_SENTENCE = "one_sentence"  # sop: a document of one sentence has no B


class Objective(ABC):
    name: str
    paper: str
    pairs_label: str | None = None  # bool column of the pairs files (None: no sentence task)
    shard_label: str | None = None  # uint8 column of the shards
    packs: bool = False  # rows of pieces (`none`) rather than sentence pairs
    specials: int = 3  # special tokens of a row: [CLS] A [SEP] B [SEP]
    min_partition_docs: int = 1  # documents a partition needs to give rows
    row_counts: tuple[str, ...]  # pairs stats.json: what each split counts of its rows beside `pairs`
    totals: tuple[str, ...]  # ... and of those, what the top level sums
    shard_counts: tuple[str, ...]  # shards manifest: label 0 and 1 of a sentence task, or the pieces
    task_title: str | None = None  # the sentence task in figures (trainer.plot)

    def resolve_options(self, options: Any) -> dict[str, Any]:
        """PairOptions fields this objective fixes (`pack`): sentence pairs are never packed."""
        if options.pack:
            raise UsageError(f"build-pairs: --pack applies to --objective none only, not {self.name}")
        return {"pack": False}

    @abstractmethod
    def rows(self, part, options, rng, dupe_pass: int) -> tuple[Any, dict[str, Any]]:
        """One pass over one partition's documents: (the rows as an Arrow table, their counts)."""

    def check_corpus(self, token_stats: dict, usable_train: int, where: str, skips: str) -> None:
        """DataError when the tokenized corpus cannot give this objective's rows."""
        if usable_train < 1:
            raise DataError(f"{where}: no training document with sentences ({skips})")

    def skipped(self, documents: int, used: int, skipped: dict[str, int]) -> dict[str, int]:
        """A split's skipped documents by reason, completed with this objective's own reasons."""
        return skipped

    def finish_split(self, counts: dict[str, Any], imbalance: list[int], max_seq_length: int) -> None:
        """Add a split's derived counts: the largest label imbalance of one pairs file."""
        counts["max_file_imbalance"] = max(map(abs, imbalance), default=0)

    def finish_totals(self, stats: dict[str, Any], total: dict[str, Any], max_seq_length: int) -> None:
        """Add the derived counts of the whole stats.json (none by default)."""
        return None

    def warning(self, stats: dict[str, Any], where: str) -> str | None:
        """A warning on finished pairs stats, if any."""
        return None

    @abstractmethod
    def summary(self, stats: dict[str, Any]) -> str:
        """What the rows of pairs stats are, for `build-pairs`' closing line."""

    @abstractmethod
    def describe(self, row: dict[str, Any]) -> str:
        """The sentence label (or pieces) of one shard row, for `corpusprep inspect`."""


def pair_stats(pairs, label: str, other: str) -> dict[str, Any]:
    """The counts of sentence pairs (`corpusprep.pair.instances.Pairs`): `label` counts label 1."""
    positive = int(pairs.label.sum())
    return {
        "pairs": len(pairs),
        label: positive,
        other: len(pairs) - positive,
        "pairs_truncated": int((pairs.truncated_tokens > 0).sum()),
        "pair_tokens_truncated": int(pairs.truncated_tokens.sum()),
        "short_target_pairs": int(pairs.short_target.sum()),
        "file_imbalance": [positive - (len(pairs) - positive)],
    }


PAIR_COUNTS = ("pairs_truncated", "pair_tokens_truncated", "short_target_pairs")  # of every sentence task
