"""What a line break inside a document means, decided before splitting (`--line-breaks`).

The splitter treats "\\n" as a hard sentence boundary. That is right for text written one sentence, one
paragraph, one list item or one verse line a line, and wrong for hard-wrapped text (Project Gutenberg books,
e-mail, text wrapped by an editor at ~70 columns), where most line breaks fall mid-sentence.

- sentence: every line break ends a sentence (text unchanged).
- paragraph: the lines of each blank-line-separated paragraph are joined with a space, except in lists and
  blocks of mixed indentation (tables, code), whose line breaks are kept (`unwrap_paragraph`).
- auto: a document is taken as hard-wrapped when (1) more than half of its line breaks inside a sentence look
  like a greedy wrapper's (the next line's first word would not have fitted within the document's width,
  `_wrap_width`), (2) most of those continue in lower case (verse, headlines and field lists start every line
  with a capital) and (3) almost no line is longer than the width (one paragraph a line has many). In such a
  document each wrap-like break is joined, unless the next line starts a list item or is indented deeper, or
  the line is an all-capitals heading; every other line break (short lines: verse, headings, a paragraph's
  last line) is kept. Documents that are not hard-wrapped (one sentence or paragraph a line, Wikipedia,
  verse, lists) come back exactly as they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable

LINE_BREAKS = ("auto", "sentence", "paragraph")
MIN_WIDTH, MAX_WIDTH = 30, 200  # hard-wrap widths seen in practice are 60-80 columns; verse is often shorter
WINDOW = 12  # columns: greedy wrapping ends most lines of a paragraph within a word's length of the width
MIN_LONE_LINE = 50  # a single wrap-like break is taken as one only after a line this long
WRAPPED_SHARE = 0.5  # more than this share of the line breaks inside sentences must look wrapped
CAPITALS_SHARE = 0.6  # ... and at most this share of those continue with a capital letter
SLACK = 2  # columns: wrappers differ on whether the width counts the last character or a trailing space
# `paragraph` mode keeps the lines of a paragraph holding list items: bullets, numbers, `name : type` and
# `Key: value` fields. `auto` looks only at the line after a wrap-like break: it stops at bullets, numbers.
LIST_ITEM = re.compile(r"^\s*([-*+•]|\d+[.)]|\w+ : |\w+:( |$))")
_BULLET = re.compile(r"^\s*([-*+•–—]\s|\d{1,3}[.)]\s|\(?[a-zA-Z]\)\s|\([ivxlcIVXLC]+\)\s)")
# A line that ends a sentence (terminal mark, then optional closing quotes/brackets) or introduces a list.
_SENTENCE_END = re.compile(r"([.!?…。！？।॥؟։።][\"'”’»)\]」』]*|:)\s*$")


def unwrap_paragraph(paragraph: list[str]) -> str:
    """Join a prose paragraph's wrapped lines; keep line breaks in lists, tables and indented blocks."""
    indents = {len(line) - len(line.lstrip()) for line in paragraph}
    if len(indents) == 1 and not any(LIST_ITEM.match(line) for line in paragraph[1:]):
        return " ".join(line.strip() for line in paragraph)
    return "\n".join(line.rstrip() for line in paragraph)


def join_paragraphs(text: str) -> str:
    """`paragraph` mode: `unwrap_paragraph` on each blank-line-separated paragraph (blank lines kept)."""
    if "\n" not in text:
        return text
    out: list[str] = []
    block: list[str] = []
    for line in text.split("\n"):
        if line.strip():
            block.append(line)
            continue
        if block:
            out.append(unwrap_paragraph(block))
            block = []
        out.append(line)
    if block:
        out.append(unwrap_paragraph(block))
    return "\n".join(out)


def _first_word(line: str) -> int:
    stripped = line.lstrip()
    end = stripped.find(" ")
    return len(stripped) if end < 0 else end


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _wrap_width(lengths: list[int]) -> int | None:
    """The width the text looks wrapped at: the longest line in the WINDOW-column band holding the most line
    ends (the highest such band), so that a few longer lines (a URL, a list item) do not move it."""
    counts = [0] * (MAX_WIDTH + 1)
    for n in lengths:
        if n <= MAX_WIDTH:
            counts[n] += 1
    best, top = 0, 0
    window = sum(counts[MAX_WIDTH - WINDOW + 1 :])
    for end in range(MAX_WIDTH, MIN_WIDTH - 1, -1):
        if window > best:
            best, top = window, end
        window += counts[end - WINDOW] - counts[end]
    width = next((n for n in range(top, top - WINDOW, -1) if counts[n]), 0)
    return width if width >= MIN_WIDTH else None


def unwrap_auto(text: str) -> str:
    """`auto` mode: join the wrapped lines of a hard-wrapped document; any other text comes back unchanged."""
    if "\n" not in text:
        return text
    lines = text.split("\n")
    lengths = [len(line.rstrip()) for line in lines]
    # Breaks inside a paragraph: line i and line i+1 both hold text.
    breaks = [i for i in range(len(lines) - 1) if lengths[i] and lines[i + 1].strip()]
    if not breaks:
        return text
    width = _wrap_width(lengths)
    if width is None:
        return text
    # Hard-wrapped text has (nearly) no line longer than its width; paragraphs a line have many.
    if sum(n > width for n in lengths) > max(1, len(lengths) // 50):
        return text

    def fits(i: int) -> bool:  # the next line's first word would have fitted on line i
        return lengths[i] + 1 + _first_word(lines[i + 1]) <= width - SLACK

    # Breaks inside a sentence: in wrapped text most of them sit where the next word would not have fitted.
    inside = [i for i in breaks if not _SENTENCE_END.search(lines[i])]
    looks_wrapped = [i for i in inside if not fits(i)]
    if len(looks_wrapped) <= WRAPPED_SHARE * len(inside):
        return text
    # Verse, headlines and `Key: value` lists start (nearly) every line with a capital; wrapped prose
    # continues its sentences mostly in lower case (German included).
    capitals = sum(lines[i + 1].lstrip()[:1].isupper() for i in looks_wrapped)
    if capitals > CAPITALS_SHARE * len(looks_wrapped):
        return text
    # One wrap-like break is weak evidence: only after a long line, in a document without longer lines.
    if len(looks_wrapped) == 1 and (lengths[looks_wrapped[0]] < MIN_LONE_LINE or max(lengths) > width):
        return text
    out = [lines[0]]
    for i in range(len(lines) - 1):
        line, following = lines[i], lines[i + 1]
        join = (
            0 < lengths[i] <= width  # a longer line is not the wrapper's
            and following.strip() != ""
            and not fits(i)
            and not _BULLET.match(following)
            and _indent(following) <= _indent(line)
            and not (line.upper() == line and line.lower() != line)  # an all-capitals heading
        )
        if join:  # a wrap-like break
            head, tail = out[-1].rstrip(), following.strip()
            # A wrapper may break after a word's hyphen ("five-and-" / "twenty"): keep the word whole.
            hyphen = head[-2:-1].isalpha() and head.endswith("-") and tail[:1].isalpha()
            out[-1] = head + ("" if hyphen else " ") + tail
        else:
            out.append(following)
    return "\n".join(out)


def line_break_rule(mode: str) -> Callable[[str], str]:
    """The text -> text function of a `--line-breaks` mode."""
    from corpusprep.errors import UsageError

    if mode == "auto":
        return unwrap_auto
    if mode == "paragraph":
        return join_paragraphs
    if mode == "sentence":
        return _unchanged
    raise UsageError(f"--line-breaks {mode!r}: choose one of {', '.join(LINE_BREAKS)}")


def _unchanged(text: str) -> str:
    return text


def with_line_breaks(split: Callable[[str], list[str]], mode: str) -> Callable[[str], list[str]]:
    """A splitter that applies the `mode` line-break rule to each text first."""
    if mode == "sentence":
        return split
    rule = line_break_rule(mode)
    return lambda text: split(rule(text))
