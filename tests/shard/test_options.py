"""`--mask-strategy` and its alias `--whole-word-mask`; the resolved strategy in the manifest."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from typer.testing import CliRunner

from corpusprep.cli import app
from corpusprep.errors import UsageError
from corpusprep.shard.options import ShardOptions


def test_whole_word_mask_is_an_alias():
    assert ShardOptions(whole_word_mask=True) == ShardOptions(mask_strategy="whole-word")
    assert asdict(ShardOptions(mask_strategy="whole-word"))["whole_word_mask"] is True
    assert ShardOptions().mask_strategy == "token"
    assert ShardOptions(mask_strategy="span").whole_word_mask is False
    assert ShardOptions(**asdict(ShardOptions(mask_strategy="span"))) == ShardOptions(mask_strategy="span")
    for strategy in ("token", "span"):
        with pytest.raises(UsageError, match=f"contradicts --mask-strategy {strategy}") as error:
            ShardOptions(whole_word_mask=True, mask_strategy=strategy)
        assert "\n" not in str(error.value)
    with pytest.raises(UsageError, match="--mask-strategy must be one of token, whole-word, span"):
        ShardOptions(mask_strategy="words")
    assert ShardOptions(masked_lm_prob=0.4, max_predictions_per_seq=200).masked_lm_prob == 0.4


def test_cli_records_the_strategy(tmp_path, pairs_dir, vocab_dir):
    runner = CliRunner()
    out = tmp_path / "s"
    base = ["shard", str(pairs_dir), "--vocab", str(vocab_dir), "-o", str(out), "--num-shards", "2",
            "--no-progress", "--workers", "1"]
    result = runner.invoke(app, [*base, "--whole-word-mask", "--mask-strategy", "span"])
    assert isinstance(result.exception, UsageError) and result.exception.exit_code == 2  # main() exits 2
    assert "contradicts --mask-strategy span" in str(result.exception)
    assert not out.exists()
    result = runner.invoke(app, [*base, "--mask-strategy", "span", "--masked-lm-prob", "0.4",
                                 "--max-predictions-per-seq", "60"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    options = manifest["options"]
    assert (options["mask_strategy"], options["masked_lm_prob"], options["max_predictions_per_seq"]) == (
        "span", 0.4, 60)
    assert manifest["objective"] == "nsp" and "not_next" in manifest["totals"]
    assert abs(manifest["totals"]["masked_tokens"] / manifest["totals"]["tokens"] - 0.4) < 0.01
    assert runner.invoke(app, ["validate", str(out)]).exit_code == 0
