"""Shards written by `corpusprep shard` read the same through pyarrow, polars and Hugging Face `datasets`,
with the schema documented in docs/DESIGN.md, and a model exported from them names the vocab they use."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.engine.files import read_json
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from corpusprep.shard.schema import SHARD_SCHEMA, SPLITS
from tests.contexts import quiet
from tests.shard.realistic import token_stream, train_vocab, write_pairs_dir


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("interop")
    vocab = train_vocab(root / "vocab", vocab_size=1500)
    pairs = write_pairs_dir(root / "pairs", token_stream(vocab), {"train": [700, 500], "validation": [200]})
    out = root / "shards"
    build_shards(pairs, vocab, out, ShardOptions(num_shards=3, row_group_size=128), context=quiet(1))
    return out


def files(shards: Path, split: str) -> list[Path]:
    return [shards / s["path"] for s in read_json(shards / "manifest.json")["splits"][split]["shards"]]


def test_pyarrow_reads_the_documented_schema_and_manifest_counts(shards):
    manifest = read_json(shards / "manifest.json")
    for split in SPLITS:
        entries = manifest["splits"][split]["shards"]
        assert entries, split
        for entry in entries:
            path = shards / entry["path"]
            assert pq.read_schema(path).remove_metadata() == SHARD_SCHEMA
            assert pq.ParquetFile(path).metadata.num_rows == entry["rows"]
            assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]
        table = pq.read_table([shards / e["path"] for e in entries])
        assert table.num_rows == manifest["splits"][split]["examples"]
        lengths = pa.compute.list_value_length(table["input_ids"]).to_numpy()
        assert np.array_equal(lengths, table["num_tokens"].to_numpy())


def test_polars_reads_the_same_values_with_unsigned_types(shards):
    pl = pytest.importorskip("polars")
    paths = files(shards, "train")
    frame = pl.read_parquet(paths)
    assert frame.schema["input_ids"] == pl.List(pl.UInt16)
    assert frame.schema["token_type_ids"] == pl.List(pl.UInt8)
    assert frame.schema["next_sentence_label"] == pl.UInt8
    expected = pq.read_table(paths)
    assert frame.height == expected.num_rows
    assert frame["input_ids"].to_list() == expected["input_ids"].to_pylist()
    assert frame["masked_lm_ids"].to_list() == expected["masked_lm_ids"].to_pylist()


def test_datasets_load_dataset_parquet(shards, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data_files = {split: [str(p) for p in files(shards, split)] for split in SPLITS}
    loaded = datasets.load_dataset("parquet", data_files=data_files, cache_dir=str(tmp_path / "cache"))
    manifest = read_json(shards / "manifest.json")
    for split in SPLITS:
        ds = loaded[split]
        assert ds.num_rows == manifest["splits"][split]["examples"]
        assert list(ds.features) == SHARD_SCHEMA.names
        arrow = ds.data.table.select(SHARD_SCHEMA.names)
        assert [f.type for f in arrow.schema] == [f.type for f in SHARD_SCHEMA]  # uint16 lists stay uint16
        table = pq.read_table(files(shards, split))
        assert arrow.cast(SHARD_SCHEMA).equals(table.cast(SHARD_SCHEMA))
        row = ds.with_format("numpy")[3]  # the form a training loop takes (datasets widens to int64)
        assert np.array_equal(row["input_ids"], table["input_ids"][3].as_py())
        assert len(row["input_ids"]) == row["num_tokens"]
        labels = np.asarray(ds["next_sentence_label"])
        assert set(np.unique(labels)) <= {0, 1}
        assert int((labels == 0).sum()) == manifest["splits"][split]["is_next"]


def test_a_batch_from_datasets_runs_through_transformers(shards, tmp_path):
    """A padded datasets batch, with labels built from masked_lm_positions / masked_lm_ids by hand (see
    corpusprep.interop.hf for the collator), is a valid BertForPreTraining forward call."""
    datasets = pytest.importorskip("datasets")
    transformers = pytest.importorskip("transformers")
    import torch

    manifest = read_json(shards / "manifest.json")
    validation = [str(p) for p in files(shards, "validation")]
    ds = datasets.load_dataset("parquet", data_files=validation, cache_dir=str(tmp_path))["train"]
    rows = ds.select(range(4)).to_list()
    L = max(r["num_tokens"] for r in rows)
    ids = torch.zeros(4, L, dtype=torch.long)
    types, mask = torch.zeros_like(ids), torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, r in enumerate(rows):
        n = r["num_tokens"]
        ids[i, :n], types[i, :n], mask[i, :n] = (
            torch.tensor(r["input_ids"]),
            torch.tensor(r["token_type_ids"]),
            1,
        )
        labels[i, r["masked_lm_positions"]] = torch.tensor(r["masked_lm_ids"])
    config = transformers.BertConfig(
        vocab_size=manifest["vocab"]["size"],
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
    )
    out = transformers.BertForPreTraining(config)(
        input_ids=ids,
        token_type_ids=types,
        attention_mask=mask,
        labels=labels,
        next_sentence_label=torch.tensor([r["next_sentence_label"] for r in rows]),
    )
    assert torch.isfinite(out.loss) and out.prediction_logits.shape == (4, L, config.vocab_size)
    assert int((labels != -100).sum()) == sum(len(r["masked_lm_positions"]) for r in rows)


def test_export_takes_the_vocab_the_shards_name(shards, tmp_path):
    """A checkpoint's saved config names its shards; their manifest names (and pins by sha256) the vocab."""
    from corpusprep.errors import UsageError
    from tests.interop.helpers import random_model, write_checkpoint
    from trainer.config import preset
    from trainer.export import export

    manifest = read_json(shards / "manifest.json")
    vocab_dir = Path(manifest["vocab"]["path"])
    model = random_model(preset("tiny", vocab_size=manifest["vocab"]["size"], hidden_size=32, num_heads=2))
    checkpoint = write_checkpoint(tmp_path / "ckpt", model, train={"data": {"shards": str(shards)}})
    out = export(checkpoint, tmp_path / "hf")
    assert (out / "vocab.txt").read_bytes() == (vocab_dir / "vocab.txt").read_bytes()
    assert (out / "tokenizer.json").read_bytes() == (vocab_dir / "tokenizer.json").read_bytes()

    moved = tmp_path / "moved"  # shards whose manifest pins another vocab than the one found
    moved.mkdir()
    (moved / "manifest.json").write_text(
        (shards / "manifest.json").read_text().replace(manifest["vocab"]["sha256"], "0" * 64)
    )
    checkpoint = write_checkpoint(tmp_path / "ckpt2", model, train={"data": {"shards": str(moved)}})
    with pytest.raises(UsageError, match="not the vocab the model was trained with"):
        export(checkpoint, tmp_path / "hf2")
