"""`--line-breaks`: hard-wrapped paragraphs are joined, line breaks that mean something are kept."""

from __future__ import annotations

import itertools
import json
import lzma
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from corpusprep.cli import app
from corpusprep.errors import UsageError
from corpusprep.read import ReadOptions, ReadStats, iter_documents
from corpusprep.split import make_splitter
from corpusprep.split.linebreaks import join_paragraphs, unwrap_auto, unwrap_paragraph

PROSE = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
    "foolishness, it was the epoch of belief, it was the epoch of incredulity. There were a king with a "
    "large jaw and a queen with a plain face, on the throne of England; there were a king with a large jaw "
    "and a queen with a fair face, on the throne of France. In both countries it was clearer than crystal to "
    "the lords of the State preserves of loaves and fishes, that things in general were settled for ever."
)
SECOND = (
    "It was the year of Our Lord one thousand seven hundred and seventy-five. Spiritual revelations were "
    "conceded to England at that favoured period, as at this. Mrs. Southcott had recently attained her "
    "five-and-twentieth blessed birthday, of whom a prophetic private in the Life Guards had heralded the "
    "sublime appearance by announcing that arrangements were made for the swallowing up of London."
)
VERSE = (
    "Tiger, tiger, burning bright\nIn the forests of the night,\nWhat immortal hand or eye\n"
    "Could frame thy fearful symmetry?"
)
LIST = (
    "Things to pack for the long trip north to the cabin by the lake this summer\n"
    "- warm clothes and boots for the cold evenings by the fire\n"
    "- a torch, spare batteries, matches and a good map of the area\n- food"
)
HEADINGS = "INTRODUCTION\nWhy this book was written\nPART ONE: THE EARLY YEARS OF THE VILLAGE SCHOOL"
ONE_PER_LINE = (
    "The committee met on Tuesday to discuss the budget for the coming year.\n"
    "It agreed to raise the fees by a small amount after a long debate.\nThe vote was close.\n"
    "Nobody expected the chairman to resign before the next meeting of the board."
)


def wrapped(*paragraphs: str, width: int = 70) -> str:
    return "\n\n".join(textwrap.fill(p, width) for p in paragraphs)


@pytest.mark.parametrize("width", [60, 70, 78])
def test_hard_wrapped_paragraphs_are_joined(width):
    text = wrapped(PROSE, SECOND, width=width)
    assert text.count("\n") > 8
    assert unwrap_auto(text) == PROSE + "\n\n" + SECOND
    split = make_splitter(line_breaks="auto")
    sentences = split(text)
    assert sentences == make_splitter(line_breaks="sentence")(PROSE + "\n" + SECOND)
    assert all(s.endswith(".") for s in sentences)
    # The old behaviour, still there with --line-breaks sentence: a "sentence" per line fragment.
    fragments = make_splitter(line_breaks="sentence")(text)
    assert sum(not s.endswith(".") for s in fragments) > len(fragments) / 2


def test_a_two_line_paragraph_alone_is_joined():
    text = textwrap.fill(SECOND[:110], 70)
    assert text.count("\n") == 1
    assert unwrap_auto(text) == SECOND[:110]


def test_wrapped_text_keeps_its_headings_lists_and_indented_verse():
    verse = "\n".join("    " + line for line in VERSE.split("\n"))
    items = "- warm clothes and boots for the cold evenings by the fire and the lake\n- a torch"
    parts = ["CHAPTER I", textwrap.fill(PROSE, 70), verse, textwrap.fill(SECOND, 70), items]
    text = "\n".join(parts)
    out = unwrap_auto(text).split("\n")
    assert out[:2] == ["CHAPTER I", PROSE]
    assert out[2:6] == verse.split("\n")
    assert out[6:] == [SECOND, *items.split("\n")]


@pytest.mark.parametrize("text", [PROSE + "\n" + SECOND, VERSE, LIST, HEADINGS, ONE_PER_LINE, PROSE, ""])
def test_text_that_is_not_hard_wrapped_is_unchanged(text):
    assert unwrap_auto(text) == text


def test_verse_wrapped_at_its_own_width_is_unchanged():
    stanza = (
        "Shall I compare thee to a summer's day\nThou art more lovely and more temperate\n"
        "Rough winds do shake the darling buds of May\nAnd summer's lease hath all too short a date"
    )
    assert unwrap_auto(stanza) == stanza


def test_paragraph_mode_joins_every_paragraph_but_lists():
    text = "one line\nand the next\n\n- a list\n- of items\n\nshort\nlines too"
    assert join_paragraphs(text) == "one line and the next\n\n- a list\n- of items\n\nshort lines too"
    assert unwrap_paragraph(["  indented", "not indented"]) == "  indented\nnot indented"
    split = make_splitter(line_breaks="paragraph")
    assert split(VERSE) == ["Tiger, tiger, burning bright In the forests of the night, What immortal hand or "
                            "eye Could frame thy fearful symmetry?"]


def test_sentence_mode_and_the_lines_splitter_keep_every_line():
    text = wrapped(PROSE)
    lines = text.split("\n")
    assert make_splitter("lines", line_breaks="auto")(text) == lines
    sentences = make_splitter(line_breaks="sentence")(text)
    assert len(sentences) > len(lines) and all(any(s in line for line in lines) for s in sentences)


def test_bad_mode_and_language_are_usage_errors():
    with pytest.raises(UsageError, match="--line-breaks"):
        make_splitter(line_breaks="wrap")
    with pytest.raises(UsageError, match="--language"):
        make_splitter(language="english")


def test_wikipedia_is_unchanged(enwiki_path, tmp_path):
    """WikiExtractor output (one paragraph a line, headings, lists) must split exactly as before."""
    with lzma.open(enwiki_path, "rt", encoding="utf-8") as f:
        sample = "".join(itertools.islice(f, 20_000))
    path = tmp_path / "wiki.txt"
    path.write_text(sample[: sample.rindex("</doc>") + len("</doc>")], encoding="utf-8")
    docs = list(iter_documents([path], ReadOptions(format="wiki"), ReadStats()))
    assert len(docs) > 100
    assert [d.id for d in docs if unwrap_auto(d.text) != d.text] == []


def test_sentences_command_line_breaks(tmp_path):
    source = tmp_path / "book.jsonl"
    source.write_text(json.dumps({"id": "b", "text": wrapped(PROSE, SECOND)}) + "\n")
    runner = CliRunner()
    outputs = {}
    for mode in ("auto", "sentence"):
        out = tmp_path / f"{mode}.txt"
        result = runner.invoke(app, ["sentences", str(source), "-o", str(out), "--line-breaks", mode])
        assert result.exit_code == 0, result.output
        outputs[mode] = out.read_text().splitlines()
    assert all(s.endswith(".") for s in outputs["auto"])
    assert len(outputs["sentence"]) > len(outputs["auto"])
    bad = [sys.executable, "-c", "from corpusprep.cli import main; main()", "sentences", str(source), "-o",
           str(tmp_path / "x.txt"), "--line-breaks", "no"]
    result = subprocess.run(bad, capture_output=True, text=True)
    assert result.returncode == 2 and "--line-breaks 'no'" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
