"""`--line-breaks` on hard-wrapped text: share of sentences that do not end a sentence, per mode.

    .venv/bin/python bench/line_breaks.py [--mb 2] [--width 70]

Builds Project-Gutenberg-style "books" from the demo corpus: its prose paragraphs (lines ending in . ! ?)
wrapped at --width columns with textwrap, a blank line between paragraphs, a "CHAPTER N" heading every 20
paragraphs. Each book is split (i) as one JSONL document and (ii) read as plain text, where each paragraph
is a document, with --line-breaks sentence (every line break ends a sentence: the old behaviour), auto and
paragraph; the unwrapped paragraphs give the floor. Also prints whether auto left verse, lists, headings and
one-sentence-per-line samples exactly as they were.
"""

from __future__ import annotations

import argparse
import re
import textwrap

from corpusprep.demo_corpus import iter_demo_documents
from corpusprep.split import make_splitter
from corpusprep.split.linebreaks import unwrap_auto

FINAL = re.compile(r"[.!?…][\"'”’»)\]]*$")
HEADING = re.compile(r"^CHAPTER \d+$")
KEPT = {
    "verse": "Tiger, tiger, burning bright\nIn the forests of the night,\nWhat immortal hand or eye\n"
    "Could frame thy fearful symmetry?",
    "list": "Things to pack for the long trip north to the cabin by the lake this summer\n- warm clothes and "
    "boots for the evenings\n- a torch, spare batteries, matches and a good map of the area\n- food",
    "headings": "INTRODUCTION\nWhy this book was written\nPART ONE: THE EARLY YEARS OF THE VILLAGE SCHOOL",
    "sentence_per_line": "The committee met on Tuesday to discuss the budget for the coming year.\n"
    "It agreed to raise the fees by a small amount after a long debate.\nThe vote was close.",
}


def books(mb: float, width: int, per_book: int = 200) -> list[list[str]]:
    paragraphs = [
        line.strip()
        for _, text in iter_demo_documents(mb)
        for line in text.split("\n")
        if FINAL.search(line.strip()) and len(line) > 20
    ]
    return [paragraphs[i : i + per_book] for i in range(0, len(paragraphs), per_book)]


def book_text(paragraphs: list[str], width: int) -> str:
    parts = []
    for i, paragraph in enumerate(paragraphs):
        if i % 20 == 0:
            parts.append(f"CHAPTER {i // 20 + 1}")
        parts.append(textwrap.fill(paragraph, width))
    return "\n\n".join(parts)


def unpunctuated(sentences: list[str]) -> float:
    """Share of sentences without a final . ! ? (the CHAPTER headings are left out)."""
    prose = [s for s in sentences if not HEADING.match(s)]
    return sum(not FINAL.search(s) for s in prose) / max(1, len(prose))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=2.0, help="demo corpus MB to draw paragraphs from")
    parser.add_argument("--width", type=int, default=70)
    args = parser.parse_args()
    corpus = books(args.mb, args.width)
    floor = make_splitter(line_breaks="sentence")
    flat = [s for book in corpus for p in book for s in floor(p)]
    print(f"{len(corpus)} books, {sum(map(len, corpus)):,} paragraphs wrapped at {args.width} columns")
    print(f"floor (unwrapped paragraphs): {len(flat):,} sentences, {unpunctuated(flat):.1%} unpunctuated")
    for mode in ("sentence", "auto", "paragraph"):
        split = make_splitter(line_breaks=mode)
        whole = [s for book in corpus for s in split(book_text(book, args.width))]
        # Plain-text input: a blank line ends a document, so every paragraph (and heading) is one.
        each = [s for book in corpus for doc in book_text(book, args.width).split("\n\n") for s in split(doc)]
        print(f"--line-breaks {mode:<9}  book a document: {len(whole):>7,} sentences, "
              f"{unpunctuated(whole):6.1%} unpunctuated;  paragraph a document: {len(each):>7,} sentences, "
              f"{unpunctuated(each):6.1%} unpunctuated")
    for name, text in KEPT.items():
        print(f"auto keeps {name}: {unwrap_auto(text) == text}")


if __name__ == "__main__":
    main()
