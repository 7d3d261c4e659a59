"""The default splitter's rules, one behaviour per test, on self-contained text."""

from __future__ import annotations

import pytest

from corpusprep.engine.rng import rng_for
from corpusprep.split import get_splitter, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Watson met Prof. Moriarty at St. Paul's. They talked.",
         ["Dr. Watson met Prof. Moriarty at St. Paul's.", "They talked."]),
        ("The firm (Acme Inc.) was sold. Acme Corp. It was bought by Smith & Co. in 1990.",
         ["The firm (Acme Inc.) was sold.", "Acme Corp.", "It was bought by Smith & Co. in 1990."]),
        ("He moved to the U.K. The weather was bad.", ["He moved to the U.K.", "The weather was bad."]),
        ("He moved to the U.K. Parliament building.", ["He moved to the U.K. Parliament building."]),
        ("Use a tool, e.g. a hammer. Then stop.", ["Use a tool, e.g. a hammer.", "Then stop."]),
        ("See Fig. 3 and No. 12 on p. 7. Done.", ["See Fig. 3 and No. 12 on p. 7.", "Done."]),
    ],
)
def test_abbreviations(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("J. R. R. Tolkien wrote it. George W. Bush read it.",
         ["J. R. R. Tolkien wrote it.", "George W. Bush read it."]),
        ("They chose Plan B. The rest failed.", ["They chose Plan B.", "The rest failed."]),
        ("It was just you and I. Then it rained.", ["It was just you and I.", "Then it rained."]),
    ],
)
def test_initials(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Pi is 3.14159 roughly. It costs $4.50 today.", ["Pi is 3.14159 roughly.", "It costs $4.50 today."]),
        ("Sales grew 12.5%. In 2001 they fell.", ["Sales grew 12.5%.", "In 2001 they fell."]),
        ("It ended in 1990. 2,000 people came.", ["It ended in 1990.", "2,000 people came."]),
        ("Mail bob.smith@example.org. Or visit www.example.com/a.html. Thanks.",
         ["Mail bob.smith@example.org.", "Or visit www.example.com/a.html.", "Thanks."]),
    ],
)
def test_numbers_and_addresses(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('He said, "Go home." She went.', ['He said, "Go home."', "She went."]),
        ('"Stop!" he cried. "Why?" she asked.', ['"Stop!" he cried.', '"Why?" she asked.']),
        ("(This is an aside.) The text goes on.", ["(This is an aside.)", "The text goes on."]),
        ("It was cited.[3] Later work disagreed.", ["It was cited.[3]", "Later work disagreed."]),
        ("Really?! Yes. Wow!! Okay.", ["Really?!", "Yes.", "Wow!!", "Okay."]),
    ],
)
def test_quotes_brackets_and_marks(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Wait... what? I see.", ["Wait... what?", "I see."]),
        ("It faded away.... Then silence.", ["It faded away....", "Then silence."]),
        ("And so on … Nobody knew.", ["And so on …", "Nobody knew."]),
        ('"Text [...] more text." End.', ['"Text [...] more text."', "End."]),
    ],
)
def test_ellipses(text, expected):
    assert split_sentences(text) == expected


def test_lists():
    assert split_sentences("1) Buy milk 2) Buy eggs 3) Go") == ["1) Buy milk", "2) Buy eggs", "3) Go"]
    assert split_sentences("a. Red b. Green") == ["a. Red", "b. Green"]
    assert split_sentences("• one thing • another thing") == ["• one thing", "• another thing"]
    # A lone label is not a sentence; numbers that do not count up are not a list.
    assert split_sentences("1. Introduction to the topic.") == ["1. Introduction to the topic."]
    assert split_sentences("He scored 3) and 7) times.") == ["He scored 3) and 7) times."]


def test_informal_text():
    assert split_sentences("where did you grow up? india? ok") == ["where did you grow up?", "india?", "ok"]
    assert split_sentences("great place. i loved it. :) we will come back") == [
        "great place.", "i loved it. :)", "we will come back"]
    assert split_sentences("She works at Yahoo! in the accounting dept.") == [
        "She works at Yahoo! in the accounting dept."]


def test_paragraphs_are_hard_boundaries():
    text = "A heading\nFirst paragraph without a period\n\n  \nSecond one. Two sentences.\n"
    assert split_sentences(text) == [
        "A heading", "First paragraph without a period", "Second one.", "Two sentences."]
    assert split_sentences("") == []
    assert split_sentences(" \n\t\n") == []


PIECES = [
    "word", "Word", "THE", "Mr.", "U.S.", "e.g.", "3.5", "1990", "I", "A.", "etc.", ".", "...", ". . .", "!",
    "?", "?!", '"', "'", "“", "”", "(", ")", "[1]", ":)", ",", "a)", "2.", "•", "é", "日本", "—", "$", "%",
    " ", " ", " ", "  ", "\n", "\t", "\u00a0", "。", "！", "」", "．", "।", "؟", "で", "３",
    "--", ",,", "''", "「", "」と", "XIV.", "17.", "usw.", "(pág.", "»", "‼", "፧", "Dann", "z.", "डॉ.",
]


@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize("language", ["en", "de", "pt", "zh", "hi"])
def test_random_text_loses_nothing(case, language):
    """On seeded random token soup: sentences are stripped, non-empty, single-line, and together keep every
    non-whitespace character in order."""
    keeps_every_character(get_splitter("default", language), PIECES, rng_for(0, "split", "random-text", case))


def keeps_every_character(split, pieces: list[str], rng) -> None:
    """400 texts of up to 80 random pieces: stripped, non-empty, single-line sentences that keep every
    non-whitespace character in order."""
    for _ in range(400):
        text = "".join(rng.choice(pieces, size=int(rng.integers(0, 80))))
        sentences = split(text)
        assert all(s and s == s.strip() and "\n" not in s for s in sentences)
        assert "".join("".join(sentences).split()) == "".join(text.split())


# Real-world English that splitters get wrong: brand names with "!", figure and equation references, repeated
# punctuation.
REGRESSIONS = [
    ("Yahoo! announced a new search engine today. Shares rose.",
     ["Yahoo! announced a new search engine today.", "Shares rose."]),
    ("She worked at Yahoo! before joining Google. It paid well.",
     ["She worked at Yahoo! before joining Google.", "It paid well."]),
    ("Jeopardy! is a quiz show. It airs daily.", ["Jeopardy! is a quiz show.", "It airs daily."]),
    ("Wow!!! Yahoo! is back. Amazing?!", ["Wow!!!", "Yahoo! is back.", "Amazing?!"]),
    ("See Fig. 3 for details. It is clear.", ["See Fig. 3 for details.", "It is clear."]),
    ("Substituting Eq. 2 into Eq. 5 gives the result. We stop here.",
     ["Substituting Eq. 2 into Eq. 5 gives the result.", "We stop here."]),
    ("As shown in Figs. 4 and 5, the error drops. Sect. 3 explains why.",
     ["As shown in Figs. 4 and 5, the error drops.", "Sect. 3 explains why."]),
    ("Results are in Tab. 2 and Eqs. 7-9 of the paper. They hold.",
     ["Results are in Tab. 2 and Eqs. 7-9 of the paper.", "They hold."]),
    ("What?! You sold it? I can't believe it.", ["What?!", "You sold it?", "I can't believe it."]),
    ("Wait... He is here. Go!", ["Wait...", "He is here.", "Go!"]),
    ("No!!! He left. She stayed.", ["No!!!", "He left.", "She stayed."]),
    ("Really??? That is odd. Okay.", ["Really???", "That is odd.", "Okay."]),
    ("Hmm.... Let me think. Fine!", ["Hmm....", "Let me think.", "Fine!"]),
]


@pytest.mark.parametrize(("text", "expected"), REGRESSIONS)
def test_real_world_regressions(text, expected):
    assert split_sentences(text) == expected
