"""Placement (corpusprep/engine/placement.py) of object-store URLs: an input URL's prefix is compared with an
output's, never with a local path; an output on an object store is refused in one line, for now."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpusprep.engine.artifact import Artifact
from corpusprep.engine.outputs import KINDS
from corpusprep.engine.placement import check_local, check_not_nested, check_output_file
from corpusprep.errors import UsageError


@pytest.mark.parametrize("output,url", [("s3://bucket/vocab", "s3://bucket/vocab"),
                                        (Path("s3://bucket/vocab"), "s3://bucket/vocab"),  # pathlib's s3:/
                                        ("gs://bucket/x.txt", "gs://bucket/x.txt")])  # fmt: skip
def test_an_output_on_an_object_store_is_refused_in_one_line(output, url, tmp_path):
    with pytest.raises(UsageError) as error:
        check_local(output, "vocab")
    scheme = url.partition(":")[0]
    assert str(error.value) == (f"vocab: {url}: outputs on {scheme}:// are not supported yet (inputs are); "
                                "write to a local path")  # fmt: skip
    with pytest.raises(UsageError, match="are not supported yet"):
        Artifact(output, KINDS["vocab"], {"test": 1}, command="vocab")
    with pytest.raises(UsageError, match="are not supported yet"):
        check_output_file(output, [tmp_path], "sentences")
    check_local(tmp_path / "out", "vocab")  # local paths and file:// URLs are what outputs are
    check_local(f"file://{tmp_path}/out", "vocab")


def test_url_inputs_are_compared_by_prefix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for inputs in (["s3://bucket/corpus/*.jsonl"], ["s3://bucket/corpus"], [Path("s3://bucket/corpus/a*")]):
        with pytest.raises(UsageError, match="overlap"):
            check_not_nested("s3://bucket/corpus/out", inputs, "vocab")
        check_not_nested("s3://bucket/other", inputs, "vocab")
        check_not_nested(tmp_path / "s3:" / "bucket" / "corpus", inputs, "vocab")  # a local folder: no URL
    assert list(tmp_path.iterdir()) == []  # and nothing made on the local disk
