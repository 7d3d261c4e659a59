"""An export records the length it was trained on: positions beyond the longest trained sequence hold their
random initialisation, so the export ends there (max_position_embeddings, the position table, the
tokenizer's model_max_length) instead of offering 512 positions of which most were never trained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safetensors import safe_open

import trainer.export as ex
from trainer.config import load_config
from trainer.import_hf import main as import_main
from trainer.train import train


def run(shards: Path, run_dir: Path, **checkpoint) -> Path:
    """Four steps of the tiny preset (512 positions) on `shards` (rows of at most 64 tokens)."""
    train(load_config({
        "model": {"preset": "tiny"}, "data": {"shards": str(shards), "batch_size": 8},
        "schedule": {"steps": 4, "warmup_steps": 1}, "checkpoint": {"every": 4, **checkpoint},
        "eval": {"every": 0, "max_batches": 1}, "logging": {"run_dir": str(run_dir), "every": 4},
        "device": "cpu",
    }))
    return run_dir


def positions(out: Path) -> tuple[int, int | None, int, int]:
    """(max_position_embeddings, corpusprep_trained_length, rows of the position table, model_max_length)."""
    config = json.loads((out / "config.json").read_text())
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        rows = f.get_slice("bert.embeddings.position_embeddings.weight").get_shape()[0]
    tokenizer = json.loads((out / "tokenizer_config.json").read_text())
    return config["max_position_embeddings"], config.get("corpusprep_trained_length"), rows, \
        tokenizer["model_max_length"]


def test_the_export_ends_at_the_longest_trained_sequence(tiny_shards, tmp_path, capsys):
    trained = run(tiny_shards, tmp_path / "run")
    out = tmp_path / "hf"
    assert ex.main([str(trained), str(out)]) == 0
    assert "max_position_embeddings 64: the longest sequence it was trained on" in capsys.readouterr().out
    assert positions(out) == (64, 64, 64, 64)
    # transformers computes what our model computes on every position it keeps (--verify's comparison)
    config, state, _ = ex.load_checkpoint(trained)
    report = ex.verify(out, ex.our_model(config, state))
    assert not report["missing_keys"] and report["mlm_max_abs_diff"] < 1e-4
    # an import of it keeps the trained length, and exports back to the same
    assert import_main([str(out), str(tmp_path / "init")]) == 0
    assert ex.main([str(tmp_path / "init"), str(tmp_path / "again")]) == 0
    assert positions(tmp_path / "again")[::2] == (64, 64)


def test_a_run_from_other_weights_keeps_their_positions(tiny_shards, tmp_path, capsys):
    """With checkpoint.init_from the positions were trained elsewhere, maybe further: all are kept, and the
    export says the trained length is not known."""
    first = run(tiny_shards, tmp_path / "first")
    second = run(tiny_shards, tmp_path / "second", init_from=str(first))
    assert ex.main([str(second), str(tmp_path / "hf")]) == 0
    assert "not known here" in capsys.readouterr().out
    assert positions(tmp_path / "hf") == (512, None, 512, 512)


@pytest.mark.parametrize("recorded", [None, 0, 600, "64", True])
def test_a_missing_or_damaged_record_keeps_the_whole_table(recorded):
    from trainer.config import preset

    config = preset("tiny", vocab_size=100)
    saved = {"train": {"checkpoint": {"init_from": ""}}, "shards": {"max_seq_length": recorded}}
    assert ex.trained_length(saved, config.max_position) is None
    assert ex.trained_length({"train": {"checkpoint": {"init_from": ""}}, "shards": {"max_seq_length": 128}},
                             config.max_position) == 128
