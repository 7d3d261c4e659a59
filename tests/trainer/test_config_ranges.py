"""Every setting's range is checked in one place (trainer.config): flags, --set, a TOML file, a pipeline's
[train] table and a saved checkpoint's model all give one line naming the setting and its value, exit 2,
before a run directory exists."""

from __future__ import annotations

import json

import pytest

from corpusprep.errors import DataError, UsageError
from tests.interop.helpers import random_model, write_checkpoint, write_vocab
from trainer import checkpoint
from trainer import export as ex
from trainer.config import load_config, preset
from trainer.run import main

BAD = [
    (["--lr", "-1"], "optim.lr=-1.0 must be a number >= 0"),
    (["--lr", "nan"], "optim.lr=nan must be a number >= 0"),
    (["--lr", "inf"], "optim.lr=inf must be a number >= 0"),
    (["--checkpoint-every", "0"], "checkpoint.every=0 must be an integer >= 1"),
    (["--log-every", "0"], "logging.every=0 must be an integer >= 1"),
    (["--num-workers", "-1"], "data.num_workers=-1 must be an integer >= 0"),
    (["--eval-every", "-1"], "eval.every=-1 must be an integer >= 0 (0: only at the end)"),
    (["--set", "eval.max_batches=-1"], "eval.max_batches=-1 must be an integer >= 0 (0: the whole split)"),
    (["--set", "data.pad_multiple=0"], "data.pad_multiple=0 must be an integer >= 1"),
    (["--set", "data.cache_bytes=0"], "data.cache_bytes=0 must be an integer >= 1"),
    (["--set", "data.prefetch_shards=-1"], "data.prefetch_shards=-1 must be an integer >= 0"),
    (["--set", "optim.beta2=1"], "optim.beta2=1.0 must be in [0, 1)"),
    (["--set", "optim.eps=0"], "optim.eps=0.0 must be a number > 0"),
    (["--set", "optim.weight_decay=-0.1"], "optim.weight_decay=-0.1 must be a number >= 0"),
    (["--set", "optim.grad_clip=-1"], "optim.grad_clip=-1.0 must be a number >= 0 (0: off)"),
    (["--set", "model.num_heads=0"], "model.num_heads=0 must be an integer >= 1"),
    (["--set", "model.hidden_size=-8"], "model.hidden_size=-8 must be an integer >= 1"),
    (["--set", "model.hidden_size=0"], "model.hidden_size=0 must be an integer >= 1"),
    (["--set", "model.num_layers=0"], "model.num_layers=0 must be an integer >= 1"),
    (["--set", "model.num_layers=-1"], "model.num_layers=-1 must be an integer >= 1"),
    (["--set", "model.intermediate_size=0"], "model.intermediate_size=0 must be an integer >= 1"),
    (["--set", "model.max_position=0"], "model.max_position=0 must be an integer >= 1"),
    (["--set", "model.dropout=2"], "model.dropout=2.0 must be in [0, 1)"),
    (["--set", "model.attention_dropout=-1"], "model.attention_dropout=-1.0 must be in [0, 1)"),
    (["--set", "model.hidden_size=129"], "model.hidden_size=129 must be divisible by model.num_heads=2"),
    (["--preset", "base", "--set", "model.num_heads=5"],
     "model.hidden_size=768 must be divisible by model.num_heads=5"),
]


@pytest.mark.slow  # ~8.8 s idle (all cases)
@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_setting_out_of_range_is_one_line_and_no_run_dir(argv, message, tiny_shards, tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(["--shards", str(tiny_shards), "--run-dir", str(run_dir), "--steps", "2", *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == f"error: config: {message}\n"
    assert not run_dir.exists()


def test_a_pipeline_table_gets_the_same_check():
    with pytest.raises(UsageError, match=r"config: model\.dropout=1\.5 must be in \[0, 1\)"):
        load_config({"model": {"dropout": 1.5}})


def test_a_saved_model_out_of_range_names_the_checkpoint(tmp_path, capsys):
    """Export, init_from and resume build the saved architecture through the same check."""
    config = preset("tiny", vocab_size=300, hidden_size=32, num_heads=4, max_position=64)
    ckpt = write_checkpoint(tmp_path / "ckpt", random_model(config))
    saved = json.loads((ckpt / "config.json").read_text())
    saved["model"]["num_heads"] = 0
    (ckpt / "config.json").write_text(json.dumps(saved))
    with pytest.raises(DataError, match=r"ckpt/config\.json: model\.num_heads=0 must be an integer >= 1"):
        checkpoint.load_checkpoint(ckpt)
    assert ex.main([str(ckpt), str(tmp_path / "hf"), "--vocab", str(write_vocab(tmp_path / "v", 300))]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "model.num_heads=0" in err


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(b"[optim]\nlr = 1e-3 # \xff\xfe\n")
    with pytest.raises(UsageError, match=r"c.toml: not UTF-8 text \(byte \d+\)"):
        load_config(path)
