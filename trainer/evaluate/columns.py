"""CoNLL-style column files -> tagged sentences: CoNLL-2003 (`word POS chunk NER`, space-separated,
`-DOCSTART-` lines between documents) and the IOB2 files UNER and WikiANN ship (tab-separated, `#` comments,
a word index first). One token a line, a blank line between sentences.

The layout is told once from the file's first token lines: the separator (tabs when a line has one, else
runs of spaces), the field count, the word column (the second when the first is a running index, else the
first; `--text-column N` names it) and the tag column (the last whose values are tags `O`, `B-X`, `I-X`,
`E-X` or `S-X`, at least 80% of them: CoNLL-2003's NER column, not its chunk column; `--label-column N`
names it). A line
starting with `#` is a comment unless it reads as a token line of that layout (CoNLL-2003 has the word `#`).

The scheme is told from the training file's tags (`scheme`): BIOES when an `E-` or `S-` tag is there, IOB1
when an entity starts with `I-` (CoNLL-2003's own files), else IOB2. The tags are kept as they are: a model
learns them in the file's scheme and seqeval scores them in its default mode, which reads all three as
conlleval does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from corpusprep.errors import DataError, UsageError
from trainer.evaluate.data import (
    IOB_TAG,
    MAX_WORDS,
    Sentence,
    Sentences,
    Split,
    head_lines,
)

DOCSTART = "-DOCSTART-"


@dataclass(frozen=True)
class Layout:
    tabs: bool  # tab-separated (else any run of spaces)
    width: int  # fields of a token line
    word: int  # 0-based columns
    tag: int

    def split(self, line: str) -> list[str]:
        return line.split("\t") if self.tabs else line.split()

    def describe(self) -> str:
        return f"column {self.word + 1} -> column {self.tag + 1}"


def _number(given: str | None, option: str, path: Path, width: int) -> int | None:
    if given is None:
        return None
    if not given.isdigit() or not 1 <= int(given) <= width:
        raise UsageError(f"{path}: {option} {given!r}: a column number from 1 to {width} (the file's token "
                         f"lines have {width} fields)")
    return int(given) - 1


def layout(path: Path, settings) -> Layout:
    """The file's columns, from its first token lines (see the module's docstring)."""
    tokens = [line for line in head_lines(path) if line.strip() and not line.startswith((DOCSTART, "#"))]
    if not tokens:
        raise DataError(f"{path}: no token lines in its first lines (a CoNLL-style file has a token a line)")
    tabs = "\t" in tokens[0]
    rows = [t.split("\t") if tabs else t.split() for t in tokens]
    width = len(rows[0])
    rows = [r for r in rows if len(r) == width]
    if width < 2:
        raise DataError(f"{path}: one field a line; a CoNLL-style file has a word and a tag at least")
    word = _number(settings.text_column, "--text-column", path, width)
    if word is None:
        word = 1 if width > 2 and all(r[0].isdigit() for r in rows) else 0
    tag = _number(settings.label_column, "--label-column", path, width)
    if tag is None:  # 80%: a malformed tag among the first lines is a fault of its line, not of the column
        tagged = [c for c in range(width) if c != word
                  and sum(bool(IOB_TAG.match(r[c])) for r in rows) >= 0.8 * len(rows)]
        if not tagged:
            raise UsageError(f"{path}: no column holds tags (O, B-X, I-X...); name the tag column with "
                             "--label-column N")
        tag = tagged[-1]
    return Layout(tabs, width, word, tag)


def read_columns(path: Path, fmt: str, settings) -> Split:
    """Sentences of a CoNLL-style column file. A token line with another field count than the layout's, an
    empty word or tag, a tag that is no `O`/`B-X`/`I-X`/`E-X`/`S-X` (for `--task ner`) or a sentence over
    MAX_WORDS words is a fault: the sentence is left out whole under skip."""
    shape = layout(path, settings)
    ner = settings.task in ("auto", "ner")
    sentence = Sentences(path, settings.on_error)
    for number, line in sentence.lines():
        if not line.strip() or line.startswith(DOCSTART):
            sentence.finish()
            continue
        cols = shape.split(line)
        if line.startswith("#") and (len(cols) != shape.width or not IOB_TAG.match(cols[shape.tag])):
            continue  # a comment (`# sent_id = ...`), not the word `#`
        if sentence.void:
            continue
        problem = None
        if len(cols) != shape.width:
            problem = f"{len(cols)} fields, the file's token lines have {shape.width}"
        elif not cols[shape.word].strip():
            problem = "empty word"
        elif ner and not IOB_TAG.match(cols[shape.tag]):
            problem = f"tag {cols[shape.tag]!r} of word {cols[shape.word]!r} is no O, B-X, I-X, E-X or S-X"
        elif not ner and not cols[shape.tag].strip():
            problem = f"word {cols[shape.word]!r} has no tag"
        elif sentence.full:
            problem = f"a sentence of more than {MAX_WORDS:,} words"
        if problem is not None:
            sentence.fault(number, problem)
            continue
        sentence.add(cols[shape.word], cols[shape.tag], number)
    split = sentence.done(shape.describe())
    if ner:
        split.scheme = scheme(split.examples)
    return split


def scheme(sentences: list[Sentence]) -> str:
    """BIOES, IOB1 or IOB2, from the tags (see the module's docstring)."""
    iob1 = False
    for sentence in sentences:
        previous = "O"
        for tag in sentence.labels:
            if tag[:2] in ("E-", "S-"):
                return "BIOES"
            if tag.startswith("I-") and previous[2:] != tag[2:]:
                iob1 = True  # an entity that starts with I-
            previous = tag
    return "IOB1" if iob1 else "IOB2"
