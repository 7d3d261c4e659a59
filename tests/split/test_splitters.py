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


@pytest.mark.parametrize("name", ["pysbd", "blingfire", "sentencex"])
def test_peer_splitters_keep_the_contract(name):
    pytest.importorskip(name)
    sentences = get_splitter(name)(TEXT)
    assert "A second paragraph" in sentences  # "\n" is a hard boundary for peers too
    assert all(s and s == s.strip() for s in sentences)
    assert "".join("".join(sentences).split()) == "".join(TEXT.split())


@pytest.mark.parametrize("name", ["pysbd", "blingfire", "sentencex"])
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
    assert set(SPLITTERS) == {"default", "lines", "pysbd", "blingfire", "sentencex"}


def test_language_codes():
    assert get_splitter("default", "en") is split_sentences
    german = get_splitter("default", "de-AT")  # a region or script after the code is ignored
    assert german("Am 3. Oktober kam er. Dann ging er.") == ["Am 3. Oktober kam er.", "Dann ging er."]
    # A code without word lists of its own gets the language-independent rules: every script's marks.
    assert get_splitter("default", "am")("ሰላም ነው። እንዴት ነህ፧") == ["ሰላም ነው።", "እንዴት ነህ፧"]
    with pytest.raises(UsageError, match="unknown language 'english'.*ISO 639-1") as error:
        get_splitter("default", "english")
    assert "\n" not in str(error.value)


def test_peers_take_the_language():
    pytest.importorskip("sentencex")
    assert get_splitter("sentencex", "zh")("我们走吧。他们走了。") == ["我们走吧。", "他们走了。"]
    pytest.importorskip("pysbd")
    with pytest.raises(UsageError, match="pysbd has no rules for 'fi'"):
        get_splitter("pysbd", "fi")
