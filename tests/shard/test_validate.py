"""`validate_shards` catches every kind of damage, naming the shard (and the row)."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.engine.files import read_json, write_json
from corpusprep.engine.manifest import sha256_file
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from corpusprep.shard.validate import validate_shards
from tests.contexts import quiet


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, pairs_dir, vocab_dir):
    out = tmp_path_factory.mktemp("pristine")
    build_shards(pairs_dir, vocab_dir, out, ShardOptions(num_shards=3), context=quiet(1))
    assert validate_shards(out) == []
    return out


@pytest.fixture
def shards(pristine, tmp_path):
    copy = tmp_path / "shards"
    shutil.copytree(pristine, copy)
    return copy


def one(problems: list[str], *fragments: str) -> None:
    assert problems, "damage went unnoticed"
    assert any(all(f in p for f in fragments) for p in problems), problems


def test_flipped_bytes(shards):
    path = shards / "train" / "shard-00001.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    one(validate_shards(shards), "train/shard-00001.parquet", "sha256")


def test_truncated_shard(shards):
    path = shards / "train" / "shard-00002.parquet"
    path.write_bytes(path.read_bytes()[:-1000])
    problems = validate_shards(shards)
    one(problems, "train/shard-00002.parquet", "bytes")
    one(problems, "train/shard-00002.parquet", "unreadable")


def test_missing_and_extra_files(shards):
    (shards / "train" / "shard-00000.parquet").rename(shards / "train" / "shard-00009.parquet")
    (shards / "validation" / ".shard-00000.parquet.tmp-123").write_bytes(b"half")
    problems = validate_shards(shards)
    one(problems, "train/shard-00000.parquet", "missing")
    one(problems, "train/shard-00009.parquet", "not in the manifest")
    one(problems, "validation/.shard-00000.parquet.tmp-123", "temporary")


def test_shard_missing_from_the_manifest(shards):
    manifest = read_json(shards / "manifest.json")
    manifest["splits"]["train"]["shards"].pop()
    write_json(shards / "manifest.json", manifest)
    problems = validate_shards(shards)
    one(problems, "train/shard-00002.parquet", "not in the manifest")
    one(problems, "train", "examples")  # the totals no longer match the files


def test_manifest_totals_that_do_not_match(shards):
    manifest = read_json(shards / "manifest.json")
    manifest["splits"]["validation"]["mask_token"] += 1
    manifest["totals"]["examples"] += 5
    write_json(shards / "manifest.json", manifest)
    problems = validate_shards(shards)
    one(problems, "validation", "mask_token")
    one(problems, "totals.examples")


def test_missing_manifest(shards):
    (shards / "manifest.json").unlink()
    one(validate_shards(shards), "manifest.json", "missing")


def rewrite(shards, name: str, change) -> None:
    """Apply `change(columns, special_ids)` to a shard; fix its manifest entry so only the rows are bad."""
    path = shards / name
    table = pq.read_table(path)
    columns = {c: table.column(c).to_pylist() for c in table.column_names}
    manifest = read_json(shards / "manifest.json")
    change(columns, manifest["vocab"]["special_ids"])
    pq.write_table(pa.Table.from_pydict(columns, schema=table.schema), path)
    for entry in manifest["splits"][name.split("/")[0]]["shards"]:
        if entry["path"] == name:
            entry.update(bytes=path.stat().st_size, sha256=sha256_file(path))
    write_json(shards / "manifest.json", manifest)


def test_a_masked_special_token_is_named_by_shard_and_row(shards):
    def mask_the_cls(columns, _):
        columns["masked_lm_positions"][17] = [0, *columns["masked_lm_positions"][17][1:]]

    rewrite(shards, "train/shard-00001.parquet", mask_the_cls)
    one(validate_shards(shards), "train/shard-00001.parquet row 17", "[CLS]/[SEP] is masked")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c, _: c["num_tokens"].__setitem__(3, 5), "num_tokens != len(input_ids)"),
        (lambda c, _: c["token_type_ids"][3].__setitem__(1, 1), "token_type_ids not 0...0 1...1"),
        (lambda c, _: c["masked_lm_positions"][3].reverse(), "not ascending"),
        (lambda c, ids: c["masked_lm_ids"][3].__setitem__(0, ids["[SEP]"]), "label is a special token"),
        (lambda c, ids: c["input_ids"][3].__setitem__(2, ids["[PAD]"]), "[CLS]/[SEP]/[PAD] inside a segment"),
        (lambda c, _: c["next_sentence_label"].__setitem__(3, 2), "next_sentence_label"),
    ],
)
def test_row_invariants(shards, change, message):
    rewrite(shards, "validation/shard-00000.parquet", change)
    one(validate_shards(shards), "validation/shard-00000.parquet row 3", message)


def test_unbalanced_shards(shards):
    def drop_rows(columns, _):
        for values in columns.values():
            del values[:2]

    rewrite(shards, "train/shard-00000.parquet", drop_rows)
    manifest = read_json(shards / "manifest.json")
    manifest["splits"]["train"]["shards"][0]["rows"] -= 2
    write_json(shards / "manifest.json", manifest)
    one(validate_shards(shards), "train", "unbalanced")


def test_cli_exit_code(shards):
    from typer.testing import CliRunner

    from corpusprep.cli import app

    assert CliRunner().invoke(app, ["validate", str(shards)]).exit_code == 0
    path = shards / "train" / "shard-00000.parquet"
    path.write_bytes(np.zeros(10, np.uint8).tobytes())
    result = CliRunner().invoke(app, ["validate", str(shards)])
    assert result.exit_code == 1 and "train/shard-00000.parquet" in result.output
