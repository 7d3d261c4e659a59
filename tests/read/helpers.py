"""Helpers for read-stage tests: read everything, check that the counts add up."""

from __future__ import annotations

from pathlib import Path

from corpusprep.read import Document, ReadOptions, ReadStats, iter_documents


def check_counts(stats: ReadStats) -> None:
    assert stats.documents_seen == stats.documents + sum(stats.skipped.values())
    assert stats.files_seen == stats.files + sum(stats.skipped_files.values())


def read_all(*inputs: str | Path, **options: str) -> tuple[list[Document], ReadStats]:
    stats = ReadStats()
    docs = list(iter_documents(list(inputs), ReadOptions(**options), stats))
    assert stats.documents == len(docs)
    check_counts(stats)
    return docs, stats
