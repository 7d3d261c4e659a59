"""get_splitter: the names, the lines splitter, the peers and the error when a peer is not installed."""

from __future__ import annotations

import builtins

import pytest

from corpusprep.errors import UsageError
from corpusprep.split import SPLITTERS, get_splitter, split_sentences

TEXT = "Mr. Smith arrived. He sat down.\n\n  A second paragraph  \n"


def test_default_is_the_rule_based_splitter():
    assert get_splitter() is split_sentences
    assert get_splitter("default")(TEXT) == ["Mr. Smith arrived.", "He sat down.", "A second paragraph"]


def test_lines_splitter():
    assert get_splitter("lines")(TEXT) == ["Mr. Smith arrived. He sat down.", "A second paragraph"]
    assert get_splitter("lines")("\n \n") == []


def test_unknown_name():
    with pytest.raises(UsageError, match="unknown splitter 'spacy'"):
        get_splitter("spacy")


@pytest.mark.parametrize("name", ["pysbd", "blingfire"])
def test_peer_splitters_keep_the_contract(name):
    pytest.importorskip(name)
    sentences = get_splitter(name)(TEXT)
    assert "A second paragraph" in sentences  # "\n" is a hard boundary for peers too
    assert all(s and s == s.strip() for s in sentences)
    assert "".join("".join(sentences).split()) == "".join(TEXT.split())


@pytest.mark.parametrize("name", ["pysbd", "blingfire"])
def test_missing_peer_is_a_usage_error(name, monkeypatch):
    real_import = builtins.__import__

    def no_peer(module, *args, **kwargs):
        if module == name:
            raise ImportError(f"No module named {module!r}")
        return real_import(module, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_peer)
    with pytest.raises(UsageError, match=f"pip install {name}") as error:
        get_splitter(name)
    assert "\n" not in str(error.value)
    assert set(SPLITTERS) == {"default", "lines", "pysbd", "blingfire"}
