"""`shard` for every objective: sop pairs and none's rows of pieces, each with every masking strategy."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from corpusprep.cli import app
from corpusprep.engine.files import read_json, write_json
from corpusprep.engine.manifest import sha256_file
from corpusprep.errors import InputError
from corpusprep.mask import strategies
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from corpusprep.shard.schema import shard_schema
from corpusprep.shard.table import examples_from_shard
from corpusprep.shard.validate import validate_shards
from corpusprep.tokenize import VocabInfo
from tests.contexts import quiet
from tests.shard.objectives_fixture import OBJECTIVE_SIZES, write_objective_pairs_dir

TRAIN, VALIDATION = sum(OBJECTIVE_SIZES["train"]), sum(OBJECTIVE_SIZES["validation"])


def tables(out: Path, split: str | None = None) -> pa.Table:
    paths = sorted(out.glob(f"{split or '*'}/shard-*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in paths])


@pytest.fixture(scope="module")
def vocab(vocab_dir) -> VocabInfo:
    return VocabInfo.load(vocab_dir)


@pytest.fixture(scope="module")
def sop_shards(tmp_path_factory, sop_pairs_dir, vocab_dir):
    out = tmp_path_factory.mktemp("sop_shards")
    options = ShardOptions(num_shards=4, mask_strategy="span", seed=2)
    return out, build_shards(sop_pairs_dir, vocab_dir, out, options, context=quiet(1))


@pytest.fixture(scope="module")
def none_shards(tmp_path_factory, none_pairs_dir, vocab_dir):
    out = tmp_path_factory.mktemp("none_shards")
    options = ShardOptions(num_shards=4, mask_strategy="whole-word", seed=2)
    return out, build_shards(none_pairs_dir, vocab_dir, out, options, context=quiet(1))


def test_sop_shards_schema_labels_and_counts(sop_shards, sop_pairs_dir, vocab):
    out, manifest = sop_shards
    assert validate_shards(out) == []
    assert manifest["objective"] == "sop" and manifest["options"]["mask_strategy"] == "span"
    table = tables(out)
    assert table.schema.equals(shard_schema(vocab.token_dtype, "sop"))
    t = manifest["totals"]
    assert set(t) >= {"in_order", "swapped"} and "not_next" not in t
    assert t["in_order"] + t["swapped"] == t["examples"] == TRAIN + VALIDATION
    # The pairs are swapped in exactly half of each file; a shard mixes both evenly.
    assert t["swapped"] == (3000 // 2 + 2000 // 2 + 600 // 2)
    for path in sorted((out / "train").glob("*.parquet")):
        label = pq.read_table(path, columns=["sentence_order_label"])["sentence_order_label"].to_numpy()
        assert abs(label.mean() - 0.5) < 0.05
    # Every row is a pair of the input with its label: [CLS] A [SEP] B [SEP], A the pairs' tokens_a.
    pairs = pa.concat_tables([pq.read_table(p) for p in sorted(sop_pairs_dir.glob("*/*.parquet"))])
    wanted = Counter(
        (tuple([vocab.cls_id, *a, vocab.sep_id, *b, vocab.sep_id]), s)
        for a, b, s in zip(pairs["tokens_a"].to_pylist(), pairs["tokens_b"].to_pylist(),
                           pairs["is_swapped"].to_pylist(), strict=True)
    )
    examples = examples_from_shard(table, vocab.pad_id, "sop")
    rows = Counter(
        (tuple(examples.ids[i, : examples.lengths[i]].tolist()), bool(examples.label[i]))
        for i in range(len(examples))
    )
    assert rows == wanted
    types = table["token_type_ids"].to_pylist()
    assert all(t.count(0) == len_a + 2 for t, len_a in zip(types, examples.len_a.tolist(), strict=True))


def test_none_shards_pieces_and_document_starts(none_shards, none_pairs_dir, vocab):
    out, manifest = none_shards
    assert validate_shards(out) == []
    assert manifest["objective"] == "none" and "next_sentence_label" not in tables(out).column_names
    table = tables(out)
    assert table.schema.equals(shard_schema(vocab.token_dtype, "none"))
    pairs = pa.concat_tables([pq.read_table(p) for p in sorted(none_pairs_dir.glob("*/*.parquet"))])
    assert manifest["totals"]["pieces"] == len(pa.concat_arrays(pairs["piece_lengths"].chunks).values)
    examples = examples_from_shard(table, vocab.pad_id, "none")
    found = Counter()
    specials = {vocab.cls_id, vocab.sep_id, vocab.pad_id}
    for i, (starts, types, positions) in enumerate(zip(
        table["document_starts"].to_pylist(), table["token_type_ids"].to_pylist(),
        table["masked_lm_positions"].to_pylist(), strict=True,
    )):
        ids = examples.ids[i, : examples.lengths[i]].tolist()
        assert starts[0] == 0 and set(types) == {0}
        ends = [*starts[1:], len(ids)]
        pieces = []
        for start, end in zip(starts, ends, strict=True):  # each piece: [CLS] tokens [SEP]
            assert ids[start] == vocab.cls_id and ids[end - 1] == vocab.sep_id
            assert not specials & set(ids[start + 1 : end - 1])
            pieces.append(tuple(ids[start + 1 : end - 1]))
        found[tuple(pieces)] += 1
        assert not {ids[p] for p in positions} & specials  # no special is masked
    wanted = Counter()
    for tokens, lengths in zip(pairs["tokens"].to_pylist(), pairs["piece_lengths"].to_pylist(), strict=True):
        ends = np.cumsum(lengths).tolist()
        wanted[tuple(tuple(tokens[e - n : e]) for e, n in zip(ends, lengths, strict=True))] += 1
    assert found == wanted
    masked = manifest["totals"]["masked_tokens"] / manifest["totals"]["tokens"]
    assert abs(masked - 0.15) < 0.01


@pytest.mark.parametrize("objective", ["sop", "none"])
@pytest.mark.parametrize("strategy", strategies.names())
def test_same_bytes_whatever_the_workers(tmp_path, sop_pairs_dir, none_pairs_dir, vocab_dir, objective,
                                         strategy):
    pairs = sop_pairs_dir if objective == "sop" else none_pairs_dir
    options = ShardOptions(num_shards=3, mask_strategy=strategy, masked_lm_prob=0.3,
                           max_predictions_per_seq=40, seed=9)
    one = build_shards(pairs, vocab_dir, tmp_path / "one", options, context=quiet(1))
    two = build_shards(pairs, vocab_dir, tmp_path / "two", options, context=quiet(2))
    assert one == two  # the manifest records every shard's sha256
    assert validate_shards(tmp_path / "two") == []
    rate = one["totals"]["masked_tokens"] / one["totals"]["tokens"]
    assert abs(rate - 0.3) < 0.01


def rewrite(shards: Path, name: str, change) -> None:
    """Apply `change(columns)` to a shard and fix its manifest entry, so only the rows are bad."""
    path = shards / name
    table = pq.read_table(path)
    columns = {c: table.column(c).to_pylist() for c in table.column_names}
    change(columns)
    pq.write_table(pa.Table.from_pydict(columns, schema=table.schema), path)
    manifest = read_json(shards / "manifest.json")
    for entry in manifest["splits"][name.split("/")[0]]["shards"]:
        if entry["path"] == name:
            entry.update(bytes=path.stat().st_size, sha256=sha256_file(path))
    write_json(shards / "manifest.json", manifest)


def row_with_pieces(columns: dict, k: int) -> int:
    return next(i for i, starts in enumerate(columns["document_starts"]) if len(starts) >= k)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda starts: starts.__setitem__(1, starts[1] + 1), "no [CLS] at a document_start"),
        (lambda starts: starts.pop(1), "[CLS]/[SEP]/[PAD] inside a piece"),
        (lambda starts: starts.__setitem__(0, 1), "does not begin at 0"),
        (lambda starts: starts.reverse(), "not ascending"),
    ],
)
def test_validate_catches_a_corrupted_document_starts(none_shards, tmp_path, change, message):
    out, _ = none_shards
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    row = []

    def corrupt(columns):
        row.append(row_with_pieces(columns, 2))
        change(columns["document_starts"][row[0]])

    rewrite(copy, "train/shard-00001.parquet", corrupt)
    problems = validate_shards(copy)
    assert any(f"train/shard-00001.parquet row {row[0]}" in p and message in p for p in problems), problems


def test_validate_catches_sop_counts_and_labels(sop_shards, tmp_path):
    out, _ = sop_shards
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    manifest = read_json(copy / "manifest.json")
    manifest["splits"]["train"]["swapped"] += 1
    write_json(copy / "manifest.json", manifest)
    rewrite(copy, "validation/shard-00000.parquet", lambda c: c["sentence_order_label"].__setitem__(4, 3))
    problems = validate_shards(copy)
    assert any("train: manifest swapped" in p for p in problems), problems
    assert any("row 4: sentence_order_label not 0 or 1" in p for p in problems), problems


def test_pairs_of_another_objective_are_refused(tmp_path, stream, vocab_dir):
    pairs = write_objective_pairs_dir(tmp_path / "pairs", stream, {"train": [50]}, "none",
                                      stats_objective="sop")
    with pytest.raises(InputError, match=r"part-00000-d0\.parquet: column tokens_a"):
        build_shards(pairs, vocab_dir, tmp_path / "out", ShardOptions(), context=quiet(1))


def test_cli_inspect_and_stats_by_objective(sop_shards, none_shards):
    runner = CliRunner()
    out, _ = sop_shards
    result = runner.invoke(app, ["inspect", str(out), "-n", "12"])
    assert result.exit_code == 0, result.output
    assert "in order" in result.output and "swapped" in result.output and "IsNext" not in result.output
    result = runner.invoke(app, ["stats", str(out)])
    assert result.exit_code == 0 and "swapped / examples" in result.output
    out, _ = none_shards
    result = runner.invoke(app, ["inspect", str(out), "-n", "3", "--split", "validation"])
    assert result.exit_code == 0, result.output
    assert result.output.count("piece") >= 3 and " | [CLS]" in result.output
    result = runner.invoke(app, ["stats", str(out)])
    assert result.exit_code == 0 and "pieces / examples" in result.output
    assert runner.invoke(app, ["validate", str(out)]).exit_code == 0
