"""build-pairs' --language and --line-breaks: validated up front, recorded, and applied before splitting."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from corpusprep.cli import app
from corpusprep.errors import UsageError
from corpusprep.pair.build import PairOptions
from tests.pair.helpers import make_vocab, synthetic_documents


@pytest.mark.parametrize("bad", [{"language": "english"}, {"language": "e1"}, {"language": "pt-"},
                                 {"line_breaks": "wrap"}])
def test_bad_language_or_line_breaks_fail_before_any_work(bad):
    with pytest.raises(UsageError):
        PairOptions(**bad)


@pytest.mark.parametrize("tag", ["en", "EN", "pt-BR", "zh_Hant"])
def test_language_tags_with_case_or_region_are_accepted(tag):
    assert PairOptions(language=tag).language == tag


def test_hard_wrapped_documents_are_joined_before_pairing(tmp_path):
    vocab = make_vocab(tmp_path / "vocab")
    # JSONL documents of sentences ending in "." and hard-wrapped at 60 columns, as Project Gutenberg is.
    documents = synthetic_documents(40, seed=4, sentences=(4, 12))
    docs = [" ".join(s.capitalize() + "." for s in doc) for doc in documents]
    corpus = tmp_path / "books.jsonl"
    lines = [json.dumps({"id": i, "text": textwrap.fill(d, 60)}) + "\n" for i, d in enumerate(docs)]
    corpus.write_text("".join(lines))
    sentences = {}
    for mode in ("auto", "sentence"):
        out = tmp_path / mode
        args = ["build-pairs", str(corpus), "--vocab", str(vocab), "-o", str(out), "--workers", "1",
                "--no-progress", "--line-breaks", mode, "--language", "en", "--dupe-factor", "1"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        stats = json.loads((out / "stats.json").read_text())
        assert stats["options"]["line_breaks"] == mode and stats["options"]["language"] == "en"
        sentences[mode] = sum(s["sentences"] for s in stats["splits"].values())
    expected = sum(doc.count(".") for doc in docs)  # one per sentence: none of the words holds a period
    assert sentences["auto"] == expected < sentences["sentence"]
