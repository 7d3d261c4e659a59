"""The default splitter: rule-based English sentence boundaries, fast enough for whole corpora.

A compiled regex finds every candidate boundary (terminal punctuation, closing quotes or brackets, space);
a few dictionary lookups decide each one from the word before it and the word after it. Numbered, lettered
and bulleted list items are found by two more regexes, only in paragraphs that can hold them.
"\\n" separates paragraphs and is always a boundary. Sentences are slices of the input, stripped, so no
non-whitespace character is ever lost or changed.
"""

from __future__ import annotations

import re

from corpusprep.split.lexicon import (
    ABBREVIATIONS,
    BEFORE_NUMBER,
    LOWERCASE_STARTERS,
    PREPOSITIVE,
    SENTENCE_STARTERS,
)

OPENERS = "\"'“‘«([{¿¡"
BULLETS = "•⁃‣◦▪●"

_CANDIDATE = re.compile(
    # a run of terminal marks or a spaced ellipsis ". . ."; starting with a plain character class lets the
    # regex engine skip ahead quickly (an alternation here made the whole scan five times slower)
    r"(?P<punct>[.!?…‽](?:(?:[ ]\.){2,}|[.!?…‽]*))"
    # closing quotes and brackets, footnote marks "[12]" and page marks ".:211" stay with the sentence
    r"(?P<close>(?:[\"'”’»)\]}]|\[\d{1,3}\]|:\d{1,4}(?:[–-]\d{1,4})?(?=\s))*)"
    r"\s+"
    r"(?=[\"'“‘«(\[{¿¡]*(?P<next>[^\s\"'“‘«(\[{¿¡]\w*\.?))"  # the next word, kept for the decision
)
_CLOCK = frozenset(("a.m", "p.m"))
# A list or question label alone before the period ("1. The item", "Q. What is it?"), never a sentence.
_LABEL = re.compile(r"\s*[\"'“‘«(\[{¿¡•⁃‣◦▪●]*(?:\d{1,3}|[A-Za-z])\s*")
# Characters that never open a sentence: a candidate followed by one of them is not a boundary.
CONTINUERS = ",;:)]}.…%"
_EMOTICON = re.compile(r"[:;=][-']?[()DPpO/\\|*]+(?=\s|$)")
# A list marker: "1." "2.)" "3)" "a." "b)" at the start of a word (or right after a bullet).
_MARKER = re.compile(r"(?<![^\s" + BULLETS + r"])(?P<label>\d{1,2}|[a-z])(?P<style>\.\)|\)|\.)(?=\s)")
# The same test, much faster as a first pass: it starts at "." or ")" and looks back at the label.
_MAYBE_MARKER = re.compile(
    r"[.)](?:(?<=[\s" + BULLETS + r"][0-9a-z].)|(?<=[\s" + BULLETS + r"]\d\d.)|(?<=^[0-9a-z].)|(?<=^\d\d.))"
    r"\)?(?=\s)"
)
_BULLET = re.compile(f"[{BULLETS}]")
_PART = re.compile(r"[-/–]")
# Abbreviations written with inner periods: "U.S", "e.g", "a.m", "Ph.D" (the final period is the candidate).
_DOTTED = re.compile(r"(?:[A-Za-z]{1,2}\.)+[A-Za-z]{1,2}")


def split_sentences(text: str) -> list[str]:
    """Split a document into sentences; "\\n" separates paragraphs and always ends a sentence."""
    sentences: list[str] = []
    for paragraph in text.split("\n"):
        if paragraph and not paragraph.isspace():
            _split_paragraph(paragraph, sentences)
    return sentences


def _split_paragraph(para: str, out: list[str]) -> None:
    cuts, skip = _list_cuts(para) if _may_hold_list(para) else ([], ())
    last = 0
    for match in _CANDIDATE.finditer(para):
        if match.start() in skip or _LABEL.fullmatch(para, last, match.start()):
            continue
        cut = _decide(para, match)
        if cut >= 0:
            cuts.append(cut)
            last = cut
    if not cuts:
        out.append(para.strip())
        return
    if skip or len(cuts) > 1:
        cuts.sort()
    start = 0
    for cut in cuts:
        sentence = para[start:cut].strip()
        if sentence:
            out.append(sentence)
        start = cut
    sentence = para[start:].strip()
    if sentence:
        out.append(sentence)


def _decide(para: str, match: re.Match) -> int:
    """Where to cut for this candidate (an index into `para`), or -1 when it is not a sentence boundary."""
    nxt = match.group("next")
    first = nxt[0]
    if first in CONTINUERS:
        if first in ":;" and (emoticon := _EMOTICON.match(para, match.end())):
            return emoticon.end()  # "I love her. :) I have": the smiley belongs to the sentence it follows
        return -1  # nothing opens a sentence with ",", ")" or ".": "affiliates. , 2000", "complex. . . .”"
    punct = match.group("punct")
    end = match.end("close")
    if first.islower():
        if len(nxt) <= 3 and para.startswith(")", match.end("next")):
            return end  # a list label: "Hello world. (b) Hello world.", "the store. w) hello"
        # A lowercase word continues the sentence ("Yahoo! in", '"Great." she said', "Co. at noon") unless
        # informal text starts a sentence in lowercase ("really? they said", "lol. i think").
        return end if _lowercase_opens(para, match, punct, nxt) else -1
    if punct == ".":
        return end if _period_ends_sentence(para, match.start(), nxt) else -1
    if "." not in punct and "…" not in punct:
        return end  # "!", "?", "?!", "!!"
    if "!" in punct or "?" in punct:
        return end  # "?.", "!..."
    return _ellipsis_cut(para, match, punct, nxt, end)


def _period_ends_sentence(para: str, at: int, nxt: str) -> bool:
    """A single period at `at` followed by whitespace and `nxt` (not lowercase)."""
    word_start = para.rfind(" ", 0, at) + 1
    word = para[word_start:at].lstrip(OPENERS)
    key = _lookup_key(word)
    if nxt[0].isdigit():
        # "p. 55", "No. 5", "N°. 1026", "U.S. 1869" continue; "in 1990. 2000 people", "item. 2. The" end.
        short = len(word) <= 2 and not word.isdigit()
        return not (key in BEFORE_NUMBER or short or _DOTTED.fullmatch(word))
    if key in PREPOSITIVE:
        return False  # "Mr. Smith", "Mt. Fuji"
    opener = nxt.lower() in SENTENCE_STARTERS
    if len(word) == 1 and word.isalpha():
        if word == "I" and word_start >= 2:
            # The pronoun ends a sentence after a lowercase word ("you and I."); "Albert I. Jones" does not.
            before = para[para.rfind(" ", 0, word_start - 1) + 1 : word_start - 1]
            if before[:1].islower():
                return True
        return opener  # an initial: "Jonas E. Smith", but "Plan B. The" ends
    if key in _CLOCK:
        return True  # "at 6 p.m. Travelers": a time ends clauses far more often than it precedes a name
    if key in ABBREVIATIONS or _DOTTED.fullmatch(word):
        return opener  # "U.S. How" ends, "U.S. Government" and "Inc. Jobs" do not
    return True


def _lookup_key(word: str) -> str:
    """The form looked up in the word lists: lowercase, the last part of "July-Sept"; none for "MS", "CO"
    (capitals are acronyms, not the abbreviations "Ms." and "Co.")."""
    if len(word) > 1 and word.isupper() and "." not in word:
        return ""
    return _PART.split(word)[-1].lower() if "-" in word or "/" in word else word.lower()


def _lowercase_opens(para: str, match: re.Match, punct: str, nxt: str) -> bool:
    if match.group("close"):
        return False  # '"Great." she said', "(an engineer.) at the"
    if punct != ".":
        if "." in punct or "…" in punct:
            return False  # an ellipsis: "really ... well, what I mean"
        # After "?" a lowercase word starts a new sentence; after "!" only a common opener ("Yahoo! in").
        return "?" in punct or nxt in LOWERCASE_STARTERS
    word = para[para.rfind(" ", 0, match.start()) + 1 : match.start()].lstrip(OPENERS)
    key = _lookup_key(word)
    if len(word) < 2 or key in ABBREVIATIONS or key in BEFORE_NUMBER or _DOTTED.fullmatch(word):
        return False
    # A common opener after any other word, or any word after a plain lowercase word of four or more letters
    # (short unknown words may be abbreviations: "fl.", "ssp."); a lone letter ("years. s") is debris.
    plain = len(word) >= 4 and word.isalpha() and word.islower()
    return nxt in LOWERCASE_STARTERS or (plain and len(nxt) > 1)


def _ellipsis_cut(para: str, match: re.Match, punct: str, nxt: str, end: int) -> int:
    start = match.start()
    if start and para[start - 1] == "[" and match.group("close").startswith("]"):
        return -1  # "[...]" marks an omission inside a quotation
    dots = punct.count(".") + 3 * punct.count("…")
    if dots >= 4:
        if " " in punct and start and not para[start - 1].isspace():
            # "compounds. . . . The": a period ends the sentence, the spaced ellipsis opens the next one.
            return start + 1
        return end  # a period plus an ellipsis: "that.... She", "period . . . . Next"
    # Three dots: an omission inside a sentence unless what follows clearly opens a new one.
    return end if nxt != "I" else -1


def _may_hold_list(para: str) -> bool:
    # Cheap tests first; the consecutive-label check in _list_cuts runs only when one of these succeeds.
    return any(b in para for b in BULLETS) or _MAYBE_MARKER.search(para) is not None


def _list_cuts(para: str) -> tuple[list[int], set[int]]:
    """Cuts before list items, and the positions of the markers' own periods (which are not boundaries).

    A marker counts only inside a run of consecutive labels in one style ("1." "2." or "a)" "b)") that starts
    the paragraph or starts at 1 / a, so a stray "p. 55" or "scored 3) and 7)" is left to the other rules.
    """
    cuts = [b.start() for b in _BULLET.finditer(para) if para[: b.start()].strip()]
    by_style: dict[str, list[tuple[int, re.Match]]] = {}
    for m in _MARKER.finditer(para):
        label = m.group("label")
        value = int(label) if label.isdigit() else ord(label) - ord("a") + 1
        by_style.setdefault(m.group("style"), []).append((value, m))
    skip: set[int] = set()
    for markers in by_style.values():
        first = 0  # index of the first marker of the current run of consecutive labels
        for k, (value, m) in enumerate(markers):
            if k and markers[k - 1][0] != value - 1:
                first = k
            continues = k + 1 < len(markers) and markers[k + 1][0] == value + 1
            if (k == first and not continues) or not _opens_list(para, *markers[first]):
                continue
            skip.add(m.start("style"))
            cut = m.start()
            head = para[:cut].rstrip()
            if head and head[-1] in BULLETS:
                cut = len(head) - 1  # "• 10. The item": the bullet starts the item
            if para[:cut].strip():
                cuts.append(cut)
    return cuts, skip


def _opens_list(para: str, value: int, marker: re.Match) -> bool:
    return value == 1 or not para[: marker.start()].strip(" " + BULLETS)
