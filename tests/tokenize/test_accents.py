"""`--strip-accents` is separate from lowercasing: other languages keep their accents in an uncased vocab."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from corpusprep.cli import app
from corpusprep.tokenize.vocab import leading_tokens, tokenizer_from_tokens


@pytest.mark.parametrize(
    ("cased", "strip", "expected"),
    [
        (False, None, "ecole a paris"),  # BERT-uncased: lowercase, strip (the English default)
        (False, False, "école à paris"),
        (True, None, "École à Paris"),  # --cased keeps both
        (True, True, "Ecole a Paris"),
    ],
)
def test_accents_and_case_are_independent(cased, strip, expected):
    tokenizer = tokenizer_from_tokens(leading_tokens(0) + ["a"], cased=cased, strip_accents=strip)
    assert tokenizer.normalizer.normalize_str("École à Paris") == expected


def test_keep_accents_option_reaches_tokenizer_json(tmp_path):
    vocab_txt = tmp_path / "vocab.txt"
    vocab_txt.write_text("\n".join(leading_tokens(0) + ["é", "e", "##s"]) + "\n", encoding="utf-8")
    runs = {}
    for flag in ("--strip-accents", "--keep-accents", None):
        out = tmp_path / f"vocab{flag}"
        args = ["vocab", "--from-vocab", str(vocab_txt), "-o", str(out)] + ([flag] if flag else [])
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        runs[flag] = json.loads((out / "tokenizer.json").read_text())["normalizer"]
    assert runs["--strip-accents"]["strip_accents"] is True and runs[None]["strip_accents"] is True
    assert runs["--keep-accents"]["strip_accents"] is False and runs["--keep-accents"]["lowercase"] is True
