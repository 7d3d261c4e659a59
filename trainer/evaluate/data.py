"""Labelled data for fine-tuning, whatever the task kind: the examples, a file's split and what was left out
of it, the file formats and how a file's is told, and the label checks. Pure Python: no torch, no
transformers (the pipeline checks settings with it).

    task = readers.read_task(settings)   # TaskData: train, dev (and test) examples, the labels, skips
    task.kind                            # the task kind's name: "tag", "ner", "classify", "regression", "qa"

Each format has its reader (`conllu.py`, `columns.py`, `tables.py`, `squad.py`; `readers.py` picks one and
reads a task's files); each task kind (`tasks/`) says which formats it reads and checks the labels. Files
are read through `corpusprep.read.streams`, so .gz/.xz/.bz2/.zst are decompressed by their magic bytes, a
BOM or CRLF does not matter and invalid UTF-8 is replaced (counted). Reading is bounded whatever the file
holds: a line over `MAX_LINE_BYTES`, a sentence over `MAX_WORDS` words and more than `MAX_LABELS` labels
are faults, and texts are cut before they are tokenized (the task kinds). Bad input (`on_error`): `fail`
(default) stops at the first malformed line with `file:line: what`, exit 1; `skip` leaves out the sentence
or row and counts it, with examples. A dev (or test) label the training file never has is the same kind of
fault: the model cannot predict it, so it is an error (`fail`) or left out of the score and counted
(`skip`), never scored silently.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from corpusprep.errors import DataError, InputError, UsageError
from corpusprep.read.document import ReadStats
from corpusprep.read.streams import (
    COMPRESSION_SUFFIXES,
    Piece,
    Unopenable,
    Unreadable,
    iter_lines,
    open_decompressed,
    read_blocks,
)

FORMATS = ("auto", "conllu", "conll", "tsv", "csv", "jsonl", "squad")
ON_ERROR = ("fail", "skip")
# by suffix; a .conll, .tsv, .txt or suffix-less file is told by its first lines (`sniff`), a .json file by
# its content (SQuAD's JSON, else JSON lines: `readers.format_of`)
SUFFIXES = {".conllu": "conllu", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
            ".iob": "conll", ".iob1": "conll", ".iob2": "conll", ".bio": "conll",
            ".bioes": "conll"}
SNIFFED = (".conll", ".tsv", ".txt", ".train", ".testa", ".testb", ".dev", ".test", "")
SNIFF_LINES = 200

# Bounds on what a task file can make this process hold (issue 39: one 60 MB line took 6 GB, a million labels
# 4.5 GB, a 10^6-word sentence 2.4 GB). Each is far beyond any real task: UD's longest sentences have a few
# hundred words, GLUE's longest line is under 10 kB, UD's richest tag sets (feats) a few thousand labels.
MAX_LINE_BYTES = 1 << 20
MAX_WORDS = 1_000
MAX_LABELS = 10_000


@dataclass(frozen=True)
class Sentence:
    """A token-level example (tagging, NER): the words and one label each ("" = not scored)."""

    words: tuple[str, ...]
    labels: tuple[str, ...]
    lines: tuple[int, ...]  # each word's line in its file, for messages


@dataclass(frozen=True)
class Row:
    """A text-level example (classification, regression): a text, a second text for pair tasks (else None),
    the label as the file gives it (a regression task reads it as a number)."""

    text: str
    text_b: str | None
    label: str
    line: int


Example = Sentence | Row


@dataclass
class Skips:
    """What `on_error = "skip"` left out: counts by reason, a few `file:line: what` examples."""

    counts: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def add(self, reason: str, where: str) -> None:
        self.counts[reason] += 1
        if len(self.examples) < 5:
            self.examples.append(where)

    def to_dict(self) -> dict:
        return {"counts": dict(sorted(self.counts.items())), "examples": self.examples}


@dataclass
class Split:
    """One file's examples, and what was read and left out."""

    path: str
    examples: list[Example]
    skips: Skips = field(default_factory=Skips)
    fields: str = ""  # the columns used, for the report ("sentence1 + sentence2 -> label")
    invalid_utf8: int = 0
    scheme: str = ""  # NER: the tagging scheme found (IOB1, IOB2, BIOES)

    @property
    def units(self) -> int:
        """Labelled words (token tasks) or rows."""
        return sum(sum(map(bool, e.labels)) if isinstance(e, Sentence) else 1 for e in self.examples)


@dataclass
class TaskData:
    kind: str  # the task kind's name, a key of trainer.evaluate.tasks.REGISTRY
    labels: tuple[str, ...]  # sorted: label id = index (a regression task has none)
    train: Split
    dev: Split
    test: Split | None = None
    pair: bool = False  # classification (or regression) of sentence pairs

    @property
    def scored(self) -> dict[str, Split]:
        return {"dev": self.dev} | ({"test": self.test} if self.test is not None else {})

    @property
    def task(self):
        from trainer.evaluate.tasks import task_kind

        return task_kind(self.kind)

    def describe(self) -> str:
        what = self.task.title + (" of pairs" if self.pair else "")
        splits = {"train": self.train, **self.scored}
        sizes = ", ".join(f"{name} {self.task.size(s)}" for name, s in splits.items())
        labels = f", {len(self.labels)} labels" if self.labels else ""
        return f"{what} ({self.train.fields}{labels}): {sizes}"


# ---------------------------------------------------------------- reading lines


class Faults:
    """The on-error policy for one file: `fault` raises (fail) or counts (skip)."""

    def __init__(self, path: Path, on_error: str, skips: Skips):
        self.path, self.on_error, self.skips = path, on_error, skips

    def fault(self, reason: str, line: int, what: str) -> None:
        where = f"{self.path}:{line}: {what}"
        if self.on_error == "fail":
            raise DataError(f"{where} (--on-error skip leaves such input out, counted)")
        self.skips.add(reason, where)


def read_lines(path: Path, stats: ReadStats,
               faults: Faults | None = None) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of a file, decompressed; unreadable or truncated files are one line. A line over
    MAX_LINE_BYTES is never held whole: it is a fault (`faults`), then (number, None) for the reader to
    leave out its sentence or row."""
    number, long = 0, False
    try:
        with open_decompressed(path) as (stream, kind):
            for line in iter_lines(read_blocks(stream, path, kind), path, stats, limit=MAX_LINE_BYTES):
                if not long:
                    number += 1
                if type(line) is Piece:  # a line over the bound: its pieces until its last
                    if not long and faults is not None:
                        faults.fault("long_line", number, f"a line over {MAX_LINE_BYTES:,} bytes")
                    long = True
                    continue
                if long:
                    long = False
                    yield number, None
                    continue
                yield number, line
    except Unopenable as error:
        raise InputError(str(error)) from None
    except Unreadable as error:
        raise DataError(str(error)) from None


def head_lines(path: Path, n: int = SNIFF_LINES) -> list[str]:
    """The first `n` lines of a file (for telling its format), each cut to 1,000 characters (a line over the
    line bound reads as one of content)."""
    lines = []
    for _, line in read_lines(path, ReadStats()):
        lines.append("\ufffd" if line is None else line[:1000])
        if len(lines) >= n:
            break
    return lines


IOB_TAG = re.compile(r"^(O|[BIES]-\S+)$")


def sniff(path: Path) -> str:
    """conllu, conll or tsv from a file's first lines: 10 tab-separated fields with a numeric id is CoNLL-U;
    blank lines between token lines, `-DOCSTART-`, or a last field that is always a tag (O, B-X, I-X) make
    a CoNLL-style column file; anything else is a table."""
    lines = head_lines(path)
    tokens = [line for line in lines if line.strip() and not line.startswith("#")]
    if tokens and all(len(t.split("\t")) == 10 for t in tokens) and tokens[0].split("\t")[0][:1].isdigit():
        return "conllu"
    inner_blank = any(not line.strip() for line in lines[: len(lines) - 1]) and len(tokens) > 1
    if any(t.startswith("-DOCSTART-") for t in tokens) or (inner_blank and tokens) or \
            (tokens and all(IOB_TAG.match(t.split()[-1] if t.split() else "") for t in tokens)):
        return "conll"
    return "tsv"


def suffix_of(path: Path) -> str:
    """The file's suffix under its compression's: `.conllu` of `train.conllu.xz`, lower case."""
    name = path.name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        name = name.removesuffix(suffix)
    return Path(name).suffix


def file_format(path: Path, fmt: str) -> str:
    """`fmt`, or for `auto` the format the name says (else the first lines); a .json file is JSON lines
    here, and SQuAD's JSON by its content (`readers.format_of`, which knows SQuAD's reader)."""
    if fmt != "auto":
        return fmt
    suffix = suffix_of(path)
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    if suffix in SNIFFED:
        return sniff(path)
    raise UsageError(f"{path}: cannot tell the format from the name; pass --format "
                     f"({', '.join(FORMATS[1:])})")


class Sentences:
    """A token-line file being read (CoNLL-U, CoNLL columns) and its sentence being read: words are added
    until a blank line finishes it into the split; a fault voids it, so that under skip it is left out
    whole. Never more than MAX_WORDS words are held (`full`)."""

    def __init__(self, path: Path, on_error: str):
        self.path, self.split, self.stats = path, Split(str(path), []), ReadStats()
        self.faults = Faults(path, on_error, self.split.skips)
        self.words: list[tuple[str, str, int]] = []
        self.void = False

    def lines(self) -> Iterator[tuple[int, str]]:
        """The file's lines; one over the line bound (a fault already) leaves out its sentence."""
        for number, line in read_lines(self.path, self.stats, self.faults):
            if line is None:
                self.drop()
            else:
                yield number, line

    def done(self, fields: str) -> Split:
        self.finish()
        self.split.invalid_utf8, self.split.fields = self.stats.invalid_utf8, fields
        return self.split

    @property
    def full(self) -> bool:
        return len(self.words) >= MAX_WORDS

    def add(self, word: str, label: str, line: int) -> None:
        self.words.append((word, label, line))

    def fault(self, line: int, problem: str) -> None:
        self.faults.fault("malformed_line", line, problem)
        self.drop()

    def drop(self) -> None:
        """Leave out the sentence being read (a fault of one of its lines, already counted)."""
        self.void = True
        self.words.clear()

    def finish(self) -> None:
        if self.words and not self.void:
            self.split.examples.append(Sentence(*map(tuple, zip(*self.words, strict=True))))
        self.words.clear()
        self.void = False


# ---------------------------------------------------------------- labels


def label_set(train: Split, names: Iterator[str]) -> tuple[str, ...]:
    """The sorted labels of a training file (ids are their indexes), bounded by MAX_LABELS; at least two."""
    labels: set[str] = set()
    for label in names:
        labels.add(label)
        if len(labels) > MAX_LABELS:
            raise DataError(f"{train.path}: more than {MAX_LABELS:,} distinct labels (a column of free text? "
                            "name the label column with --label-column)")
    if len(labels) < 2:
        raise DataError(f"{train.path}: only one label ({next(iter(labels))!r}); nothing to learn")
    return tuple(sorted(labels))


def check_known_labels(split: Split, known: set[str], faults: Faults, whole_sentence: bool = False) -> None:
    """A scored label the training file never has: a fault. Under skip the word (or row) is left out of the
    score: a tagging sentence keeps its other words, the unknown one gets no label (`whole_sentence`: NER,
    where a word cannot leave an entity sequence, leaves out the sentence)."""
    kept: list[Example] = []
    for example in split.examples:
        if isinstance(example, Row):
            if example.label in known:
                kept.append(example)
            else:
                faults.fault("unknown_label", example.line, f"label {example.label!r} is not in the training "
                             "data")
            continue
        labels = list(example.labels)
        for i, label in enumerate(labels):
            if label and label not in known:
                faults.fault("unknown_label", example.lines[i], f"label {label!r} of word "
                             f"{example.words[i]!r} is not in the training data")
                labels[i] = ""  # no label: not scored
        if whole_sentence and "" in labels:
            continue
        kept.append(Sentence(example.words, tuple(labels), example.lines))
    split.examples = kept
