"""`build_shards`: balance, manifest, determinism across workers, reruns, readers, the CLI."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from corpusprep.cli import app
from corpusprep.engine.executor import LocalExecutor
from corpusprep.engine.files import read_json
from corpusprep.engine.rng import rng_for
from corpusprep.engine.stage import RunContext
from corpusprep.errors import UsageError
from corpusprep.shard.build import build_shards, plan_split
from corpusprep.shard.options import ShardOptions
from corpusprep.shard.schema import shard_schema
from corpusprep.shard.validate import validate_shards
from corpusprep.tokenize import VocabInfo
from tests.contexts import quiet
from tests.shard.realistic import PAIR_SIZES


def shard_bytes(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*.parquet"))}


@pytest.fixture(scope="module")
def built(tmp_path_factory, pairs_dir, vocab_dir):
    out = tmp_path_factory.mktemp("shards")
    options = ShardOptions(examples_per_shard=1000, seed=3)
    return out, build_shards(pairs_dir, vocab_dir, out, options, context=quiet(1))


def test_balanced_shards_and_manifest(built, pairs_dir, vocab_dir):
    out, manifest = built
    assert manifest == read_json(out / "manifest.json")
    assert validate_shards(out) == []
    train, validation = manifest["splits"]["train"], manifest["splits"]["validation"]
    assert train["examples"] == sum(PAIR_SIZES["train"])
    assert validation["examples"] == sum(PAIR_SIZES["validation"])
    assert len(train["shards"]) == 8 and len(validation["shards"]) == 1  # ceil(7500 / 1000)
    rows = [s["rows"] for s in train["shards"]]
    assert max(rows) - min(rows) <= 1 and sum(rows) == 7500
    vocab = VocabInfo.load(vocab_dir)
    assert manifest["vocab"]["sha256"] == vocab.sha256 and manifest["vocab"]["size"] == vocab.size
    assert manifest["vocab"]["special_ids"]["[MASK]"] == vocab.mask_id
    assert manifest["options"] == asdict(ShardOptions(examples_per_shard=1000, seed=3))
    assert manifest["seed"] == 3
    assert manifest["pairs_stats"] == read_json(pairs_dir / "stats.json")
    assert manifest["max_seq_length"] == 128  # from the pairs' stats.json
    for key, total in manifest["totals"].items():
        assert total == train[key] + validation[key]
    # the decisions taken while masking are what the files show (a random draw never equals the original)
    assert manifest["mask_decisions"] == {k: manifest["totals"][k] for k in manifest["mask_decisions"]}
    t = manifest["totals"]
    assert t["is_next"] + t["not_next"] == t["examples"]
    assert t["mask_token"] + t["random_token"] + t["kept_token"] == t["masked_tokens"]
    assert abs(t["masked_tokens"] / t["tokens"] - 0.15) < 0.01
    assert not (out / ".work").exists()


def test_shards_are_globally_shuffled(built, pairs_dir):
    out, _ = built
    # NotNext pairs are interleaved with IsNext ones in the input; every shard mixes both evenly, and the
    # rows of shard 0 are not in input order (their lengths do not follow the first pairs file's).
    first = pq.read_table(pairs_dir / "train" / "part-00000-d0.parquet")
    input_lengths = (first["tokens_a"].combine_chunks().value_lengths().to_numpy()
                     + first["tokens_b"].combine_chunks().value_lengths().to_numpy() + 3)
    shard = pq.read_table(out / "train" / "shard-00000.parquet")
    assert not np.array_equal(shard["num_tokens"].to_numpy()[:100], input_lengths[:100])
    for path in sorted((out / "train").glob("*.parquet")):
        labels = pq.read_table(path, columns=["next_sentence_label"])["next_sentence_label"].to_numpy()
        assert abs(labels.mean() - 0.5) < 0.07


def test_plan_is_balanced_and_proportional():
    files = [30_000, 20_000, 10_000, 7]
    plan = np.array(plan_split(files, 6, rng_for(0, "plan", "t")))
    assert plan.sum(axis=1).tolist() == files
    assert set(plan.sum(axis=0).tolist()) == {60_007 // 6, 60_007 // 6 + 1}
    expected = np.outer(files, np.full(6, 1 / 6))
    assert np.all(np.abs(plan - expected)[:3] < 5 * np.sqrt(expected[:3]))  # hypergeometric spread


@pytest.mark.slow  # ~1.4 s idle
def test_same_bytes_whatever_the_workers(tmp_path, pairs_dir, vocab_dir, built):
    options = ShardOptions(examples_per_shard=1000, seed=3)
    build_shards(pairs_dir, vocab_dir, tmp_path / "two", options, context=quiet(2))
    out, _ = built
    assert shard_bytes(tmp_path / "two") == shard_bytes(out)
    assert (tmp_path / "two" / "manifest.json").read_bytes() == (out / "manifest.json").read_bytes()


def test_rerun_is_a_no_op_and_different_options_need_overwrite(tmp_path, pairs_dir, vocab_dir, capsys):
    out = tmp_path / "s"
    options = ShardOptions(num_shards=3, dupe_masks=2, seed=5)
    manifest = build_shards(pairs_dir, vocab_dir, out, options, context=quiet(1))
    assert manifest["splits"]["train"]["examples"] == 2 * 7500  # two maskings of each training pair
    assert manifest["splits"]["validation"]["examples"] == 700  # validation pairs are masked once
    assert [len(s["shards"]) for s in manifest["splits"].values()] == [3, 1]
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")}
    assert build_shards(pairs_dir, vocab_dir, out, options, context=RunContext(LocalExecutor(1))) == manifest
    assert "nothing to do" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")} == mtimes
    other = ShardOptions(num_shards=2, seed=5)
    with pytest.raises(UsageError, match="--overwrite"):
        build_shards(pairs_dir, vocab_dir, out, other, context=quiet(1))
    replaced = build_shards(pairs_dir, vocab_dir, out, other, context=quiet(1, overwrite=True))
    assert len(replaced["splits"]["train"]["shards"]) == 2 and validate_shards(out) == []
    assert sorted(p.name for p in (out / "train").iterdir()) == ["shard-00000.parquet", "shard-00001.parquet"]


def test_refuses_a_foreign_directory(tmp_path, pairs_dir, vocab_dir):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="no corpusprep run wrote"):
        build_shards(pairs_dir, vocab_dir, tmp_path, ShardOptions(), context=quiet(1))
    with pytest.raises(UsageError, match="overlap"):  # its own input: refused before anything is touched
        build_shards(pairs_dir, vocab_dir, pairs_dir, ShardOptions(), context=quiet(overwrite=True))
    other_pairs = tmp_path / "other"
    shutil.copytree(pairs_dir, other_pairs)
    with pytest.raises(UsageError, match="holds pairs, not shards"):  # another kind: even with --overwrite
        build_shards(pairs_dir, vocab_dir, other_pairs, ShardOptions(), context=quiet(overwrite=True))


def test_readable_by_pyarrow_polars_and_duckdb(built):
    import polars as pl

    out, manifest = built
    path = out / manifest["splits"]["train"]["shards"][0]["path"]
    table = pq.read_table(path)
    assert table.schema.equals(shard_schema())
    frame = pl.read_parquet(path)
    assert frame.height == table.num_rows
    assert frame["input_ids"].list.len().to_list() == frame["num_tokens"].cast(pl.Int64).to_list()
    meta = pq.ParquetFile(path).metadata
    assert meta.row_group(0).num_rows == min(meta.num_rows, ShardOptions().row_group_size)
    duckdb = pytest.importorskip("duckdb")
    rows, masked = duckdb.sql(f"select count(*), sum(len(masked_lm_ids)) from '{path}'").fetchone()
    assert rows == table.num_rows and masked == len(table["masked_lm_ids"].combine_chunks().values)


@pytest.mark.slow  # ~2.2 s idle
def test_cli_shard_validate_stats_inspect(tmp_path, pairs_dir, vocab_dir):
    runner = CliRunner()
    out = tmp_path / "cli"
    result = runner.invoke(app, ["shard", str(pairs_dir), "--vocab", str(vocab_dir), "-o", str(out),
                                 "--num-shards", "2", "--whole-word-mask", "--no-progress", "--workers", "1"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["whole_word_mask"] is True and len(manifest["splits"]["train"]["shards"]) == 2
    result = runner.invoke(app, ["validate", str(out)])
    assert result.exit_code == 0 and "valid" in result.output
    plot = tmp_path / "plot.png"
    result = runner.invoke(app, ["stats", str(out), "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "masked_tokens / tokens" in result.output and "longest in batch" in result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = runner.invoke(app, ["inspect", str(out), "-n", "3", "--split", "validation"])
    assert result.exit_code == 0, result.output
    assert result.output.count("predictions") == 3 and "[CLS]" in result.output and "/" in result.output
    result = runner.invoke(app, ["shard", str(pairs_dir), "--vocab", str(vocab_dir), "-o", str(out),
                                 "--num-shards", "2", "--examples-per-shard", "5"])
    assert result.exit_code != 0
