"""One default learning rate per model preset, where the docs say: tiny 1e-3, mini 5e-4, BERT's 1e-4 from
small up (and for a run from other weights without a preset); `--print-config` shows the resolved value."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainer.config import PRESET_LR, PRESETS, load_config
from trainer.run import main


def printed_lr(capsys, *argv: str) -> float:
    assert main([*argv, "--print-config"]) == 0
    return json.loads(capsys.readouterr().out)["optim"]["lr"]


@pytest.mark.parametrize(("argv", "lr"), [
    ((), 1e-3),  # tiny, the default preset
    (("--preset", "tiny"), 1e-3),
    (("--preset", "mini"), 5e-4),
    (("--preset", "small"), 1e-4),
    (("--preset", "base"), 1e-4),
    (("--preset", "large"), 1e-4),
    (("--preset", "mini", "--lr", "2e-4"), 2e-4),  # a value given always wins
    (("--set", "optim.lr=3e-3"), 3e-3),
    (("--init-from", "runs/base"), 1e-4),  # the saved architecture, unknown here: BERT's
    (("--init-from", "runs/base", "--preset", "mini"), 5e-4),
])
def test_print_config_shows_the_presets_learning_rate(capsys, argv, lr):
    assert printed_lr(capsys, *argv) == pytest.approx(lr)


def test_every_preset_has_one_default_and_help_names_them(capsys):
    assert set(PRESET_LR) == set(PRESETS)
    assert load_config({"model": {"preset": "mini"}}).optim.lr == PRESET_LR["mini"]
    assert load_config({"model": {"preset": "mini"}, "optim": {"lr": 0.0}}).optim.lr == 0.0  # set, not unset
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "default: the preset's: tiny 1e-03, mini 5e-04, small 1e-04" in help_text
    assert main(["--preset", "huge", "--print-config"]) == 2  # an unknown preset: one line, as before
    assert "unknown model preset 'huge'" in capsys.readouterr().err


def test_the_architecture_is_resolved_without_torch():
    """trainer.model_config owns BertConfig and the presets (trainer.model builds from them, with no import
    back): a config is resolved to its architecture without importing torch or the model."""
    code = ("import sys, trainer.config as c; c.load_config(None).model.bert_config(vocab_size=8); "
            "c.preset('base', vocab_size=8); print(sorted({'torch', 'trainer.model'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr
