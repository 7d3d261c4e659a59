"""Placement (corpusprep/engine/placement.py) of object-store URLs: an input URL's prefix is compared with an
output's, never with a local path (outputs on a store: tests/cli/test_s3_outputs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpusprep.engine.placement import check_not_nested
from corpusprep.errors import UsageError


def test_url_inputs_are_compared_by_prefix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for inputs in (["s3://bucket/corpus/*.jsonl"], ["s3://bucket/corpus"], [Path("s3://bucket/corpus/a*")]):
        with pytest.raises(UsageError, match="overlap"):
            check_not_nested("s3://bucket/corpus/out", inputs, "vocab")
        check_not_nested("s3://bucket/other", inputs, "vocab")
        check_not_nested(tmp_path / "s3:" / "bucket" / "corpus", inputs, "vocab")  # a local folder: no URL
    assert list(tmp_path.iterdir()) == []  # and nothing made on the local disk
