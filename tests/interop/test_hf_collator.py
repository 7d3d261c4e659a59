"""`corpusprep.interop.hf`: our shards, loaded with `datasets`, train `transformers.BertForPreTraining` with
`transformers.Trainer` through the documented collator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from corpusprep.interop.hf import IGNORE_INDEX, PreTrainingCollator, data_files
from tests.interop.helpers import one_thread
from tests.trainer.conftest import build_shards


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    """Real text (the demo corpus, 0.4 MB), a 1,000-token vocab, pairs of at most 64 tokens."""
    return build_shards(tmp_path_factory.mktemp("hf_shards"), max_mb=0.4, vocab_size=1000, num_shards=2)


def rows_of(shards: Path, tmp_path: Path, split: str = "train"):
    datasets = pytest.importorskip("datasets")
    files = data_files(shards)
    assert set(files) == {"train", "validation"}
    return datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "cache"))[split]


@pytest.mark.slow  # module fixture: shards (~3 s)
def test_collator_builds_labels_at_the_masked_positions_only(shards, tmp_path):
    ds = rows_of(shards, tmp_path)
    rows = ds.select(range(6)).to_list()
    pad = json.loads((shards / "manifest.json").read_text())["vocab"]["special_ids"]["[PAD]"]
    collator = PreTrainingCollator.from_shards(shards)
    assert collator.pad_token_id == pad
    batch = collator(rows)
    longest = max(len(r["input_ids"]) for r in rows)
    assert batch["input_ids"].shape == (6, -(-longest // 8) * 8)
    assert all(t.dtype == torch.long for t in batch.values())
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        assert batch["input_ids"][i, :n].tolist() == row["input_ids"]
        assert (batch["input_ids"][i, n:] == pad).all() and (batch["token_type_ids"][i, n:] == 0).all()
        assert batch["token_type_ids"][i, :n].tolist() == row["token_type_ids"]
        assert batch["attention_mask"][i].tolist() == [1] * n + [0] * (batch["input_ids"].shape[1] - n)
        labels = batch["labels"][i]
        predicted = torch.nonzero(labels != IGNORE_INDEX).flatten().tolist()
        assert predicted == row["masked_lm_positions"] and len(predicted) > 0
        assert labels[predicted].tolist() == row["masked_lm_ids"]
    assert batch["next_sentence_label"].tolist() == [r["next_sentence_label"] for r in rows]
    masked_lm = PreTrainingCollator(pad, pad_to_multiple_of=1, nsp=False)(rows)
    assert set(masked_lm) == {"input_ids", "token_type_ids", "attention_mask", "labels"}
    assert masked_lm["input_ids"].shape[1] == longest


def tiny_bert_config(transformers, vocab_size: int):
    return transformers.BertConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=64,
    )


@pytest.mark.slow  # module fixture: shards (~3 s)
def test_bert_for_masked_lm_takes_the_batch(shards, tmp_path):
    transformers = pytest.importorskip("transformers")
    rows = rows_of(shards, tmp_path).select(range(8)).to_list()
    vocab_size = json.loads((shards / "manifest.json").read_text())["vocab"]["size"]
    model = transformers.BertForMaskedLM(tiny_bert_config(transformers, vocab_size))
    with torch.no_grad():
        loss = model(**PreTrainingCollator.from_shards(shards, nsp=False)(rows)).loss.item()
    assert 5.0 < loss < 9.0  # ~ln(1000) at init


@pytest.mark.slow  # module fixture: shards (~3 s)
def test_transformers_trainer_learns_from_our_shards(shards, tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ds = rows_of(shards, tmp_path)
    vocab_size = json.loads((shards / "manifest.json").read_text())["vocab"]["size"]
    transformers.set_seed(0)
    model = transformers.BertForPreTraining(tiny_bert_config(transformers, vocab_size))
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=16,
        max_steps=40,
        learning_rate=2e-3,
        warmup_steps=4,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        remove_unused_columns=False,  # the collator needs masked_lm_positions / masked_lm_ids
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    collator = PreTrainingCollator.from_shards(shards)
    with one_thread():
        trainer = transformers.Trainer(model=model, args=args, train_dataset=ds, data_collator=collator)
        trainer.train()
    losses = [r["loss"] for r in trainer.state.log_history if "loss" in r]
    assert len(losses) == 40 and all(np.isfinite(losses))
    first, last = float(np.mean(losses[:5])), float(np.mean(losses[-5:]))
    # MLM + NSP cross-entropy starts near ln(1000) + ln(2) = 7.6; measured after 40 steps: 6.7
    assert last < first - 0.5, (first, last)


@pytest.mark.slow  # ~2.6 s idle
def test_the_collator_needs_only_torch_and_numpy():
    import subprocess
    import sys

    code = (
        "import sys, corpusprep.interop.hf;"
        "heavy = ('polars', 'transformers', 'datasets', 'typer', 'rich', 'tokenizers');"
        "print([m for m in heavy if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


@pytest.mark.slow  # ~1.6 s idle
def test_packed_rows_give_transformers_each_pieces_own_logits(tmp_path):
    """Objective `none`, packed: the collator's position ids and 4-D mask make transformers' BertForMaskedLM
    compute, for every piece of a packed row, the logits it computes for that piece alone."""
    transformers = pytest.importorskip("transformers")
    shards = build_shards(tmp_path / "none", max_mb=0.2, vocab_size=500, num_shards=1, objective="none")
    import pyarrow.parquet as pq

    table = pq.read_table(next((shards / "train").glob("*.parquet")))
    rows = [r for r in table.slice(0, 64).to_pylist() if len(r["document_starts"]) > 1][:4]
    assert len(rows) == 4  # packed rows of several documents
    collator = PreTrainingCollator.from_shards(shards)
    assert collator.packed and not collator.nsp
    batch = collator(rows)
    length = batch["input_ids"].shape[1]
    assert batch["attention_mask"].shape == (4, 1, length, length) and "position_ids" in batch
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(tiny_bert_config(transformers, 500)).eval()
    with torch.no_grad():
        packed = model(**{k: v for k, v in batch.items() if k != "labels"}).logits
        for i, row in enumerate(rows):
            ends = [*row["document_starts"][1:], len(row["input_ids"])]
            for start, end in zip(row["document_starts"], ends, strict=True):
                alone = model(input_ids=torch.tensor([row["input_ids"][start:end]])).logits[0]
                torch.testing.assert_close(packed[i, start:end], alone, atol=1e-4, rtol=1e-4)


@pytest.mark.slow  # module fixture: shards (~3 s)
def test_the_collator_refuses_settings_that_contradict_the_shards(shards, tmp_path):
    """Masked LM alone (nsp=False) suits any shards; packing, a sentence label on `none` rows or another
    label column would train something else than the shards hold: refused, naming the objective."""
    from corpusprep.errors import UsageError

    assert not PreTrainingCollator.from_shards(shards, nsp=False).nsp
    for wrong in ({"packed": True}, {"label_column": "sentence_order_label"}):
        with pytest.raises(UsageError, match="contradicts these nsp shards"):
            PreTrainingCollator.from_shards(shards, **wrong)
