"""ReadStats: counts merge exactly, examples stay capped, to_dict is plain JSON."""

from __future__ import annotations

import json

from corpusprep.read import ReadStats
from corpusprep.read.document import MAX_EXAMPLES


def stats_with(skips: int, reason: str = "invalid_json") -> ReadStats:
    stats = ReadStats(files_seen=1, files=1, bytes=100, documents_seen=10 + skips, documents=10)
    for i in range(skips):
        stats.skip_document(reason, f"f.jsonl:{i + 1}: bad")
    return stats


def test_examples_are_capped_but_counts_are_exact():
    stats = stats_with(MAX_EXAMPLES + 7)
    assert stats.skipped == {"invalid_json": MAX_EXAMPLES + 7}
    assert stats.examples["invalid_json"] == [f"f.jsonl:{i + 1}: bad" for i in range(MAX_EXAMPLES)]


def test_merge_adds_counts_and_keeps_invariants():
    total = stats_with(3).merge(stats_with(4)).merge(stats_with(2, "null_text"))
    assert (total.files_seen, total.files, total.bytes, total.documents) == (3, 3, 300, 30)
    assert total.skipped == {"invalid_json": 7, "null_text": 2}
    assert total.documents_seen == total.documents + sum(total.skipped.values())
    assert len(total.examples["invalid_json"]) == MAX_EXAMPLES


def test_to_dict_is_json():
    data = json.loads(json.dumps(stats_with(2).to_dict()))
    assert data["skipped"] == {"invalid_json": 2} and data["documents_seen"] == 12
    assert set(data) == {"files_seen", "files", "skipped_files", "bytes", "documents_seen", "documents",
                         "skipped", "invalid_utf8", "nul_bytes", "warnings", "examples", "documents_cut",
                         "document_parts", "skipped_directories"}
