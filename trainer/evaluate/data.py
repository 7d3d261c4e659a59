"""Labelled data for fine-tuning: token tagging from CoNLL-U, sentence (pair) classification from
TSV/CSV/JSONL. Pure Python: no torch, no transformers (the pipeline checks settings with it).

    task = read_task(settings)     # TaskData: train, dev (and test) examples, the label set, skips
    task.kind                      # "tag" or "classify"

Files are read through `corpusprep.read.streams`, so .gz/.xz/.bz2/.zst are decompressed by their magic
bytes, a BOM or CRLF does not matter and invalid UTF-8 is replaced (counted). Bad input (`on_error`):
`fail` (default) stops at the first malformed line with `file:line: what`, exit 1; `skip` leaves out the
sentence or row and counts it, with examples. A dev (or test) label the training file never has is the
same kind of fault: the model cannot predict it, so it is an error (`fail`) or left out of the score and
counted (`skip`), never scored silently.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from corpusprep.engine import storage
from corpusprep.engine.records import parse_json
from corpusprep.errors import DataError, InputError, UsageError
from corpusprep.read.document import ReadStats
from corpusprep.read.streams import (
    COMPRESSION_SUFFIXES,
    Unopenable,
    Unreadable,
    iter_lines,
    open_decompressed,
    read_blocks,
)

TASKS = ("auto", "tag", "classify")
FORMATS = ("auto", "conllu", "tsv", "csv", "jsonl")
ON_ERROR = ("fail", "skip")
SUFFIXES = {".conllu": "conllu", ".conll": "conllu", ".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl",
            ".json": "jsonl", ".ndjson": "jsonl"}  # fmt: skip

# CoNLL-U: 10 tab-separated fields; the tag columns a tagger can learn, by name (numbers 2-10 work too)
CONLLU_FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
CONLLU_LABELS = {"upos": 4, "xpos": 5, "feats": 6, "deprel": 8}
WORD_ID = re.compile(r"^[1-9][0-9]*$")
RANGE_ID = re.compile(r"^([1-9][0-9]*)-([1-9][0-9]*)$")  # a multiword token: its words follow
EMPTY_ID = re.compile(r"^(0|[1-9][0-9]*)\.[1-9][0-9]*$")  # an empty node (enhanced graphs only)

# Column names recognised in a header (case-insensitive), GLUE's and the usual others. A file matching
# more than one of a kind is ambiguous: name the column.
LABEL_NAMES = ("label", "gold_label", "quality", "is_duplicate", "labels", "class")
PAIR_NAMES = (("sentence1", "sentence2"), ("#1 string", "#2 string"), ("question1", "question2"),
              ("question", "sentence"), ("premise", "hypothesis"), ("text_a", "text_b"))  # fmt: skip
TEXT_NAMES = ("sentence", "text", "text_a")


@dataclass(frozen=True)
class Sentence:
    """A tagging example: the words (syntactic words, as UD tags them) and one label each."""

    words: tuple[str, ...]
    labels: tuple[str, ...]
    lines: tuple[int, ...]  # each word's line in its file, for messages


@dataclass(frozen=True)
class Row:
    """A classification example: a text, a second text for pair tasks (else None), the label."""

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

    @property
    def units(self) -> int:
        """What is scored: labelled words for tagging, rows for classification."""
        return sum(sum(map(bool, e.labels)) if isinstance(e, Sentence) else 1 for e in self.examples)


@dataclass
class TaskData:
    kind: str  # "tag" | "classify"
    labels: tuple[str, ...]  # sorted: label id = index
    train: Split
    dev: Split
    test: Split | None = None
    pair: bool = False  # classification of sentence pairs

    @property
    def scored(self) -> dict[str, Split]:
        return {"dev": self.dev} | ({"test": self.test} if self.test is not None else {})

    def describe(self) -> str:
        what = "tagging" if self.kind == "tag" else "pair classification" if self.pair else "classification"

        def size(name: str, s: Split) -> str:
            if self.kind == "tag":
                return f"{name} {len(s.examples):,} sentences ({s.units:,} words)"
            return f"{name} {len(s.examples):,} rows"

        sizes = ", ".join(size(name, s) for name, s in {"train": self.train, **self.scored}.items())
        return f"{what} ({self.train.fields}, {len(self.labels)} labels): {sizes}"


# ---------------------------------------------------------------- reading lines


def read_lines(path: Path, stats: ReadStats) -> Iterator[tuple[int, str]]:
    """(line number, text) of a file, decompressed; unreadable or truncated files are one line."""
    try:
        with open_decompressed(path) as (stream, kind):
            yield from enumerate(iter_lines(read_blocks(stream, path, kind), path, stats), 1)
    except Unopenable as error:
        raise InputError(str(error)) from None
    except Unreadable as error:
        raise DataError(str(error)) from None


def file_format(path: Path, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    name = path.name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        name = name.removesuffix(suffix)
    found = SUFFIXES.get(Path(name).suffix)
    if found is None:
        raise UsageError(f"{path}: cannot tell the format from the name; pass --format "
                         f"({', '.join(FORMATS[1:])})")  # fmt: skip
    return found


class Faults:
    """The on-error policy for one file: `fault` raises (fail) or counts (skip)."""

    def __init__(self, path: Path, on_error: str, skips: Skips):
        self.path, self.on_error, self.skips = path, on_error, skips

    def fault(self, reason: str, line: int, what: str) -> None:
        where = f"{self.path}:{line}: {what}"
        if self.on_error == "fail":
            raise DataError(f"{where} (--on-error skip leaves such input out, counted)")
        self.skips.add(reason, where)


# ---------------------------------------------------------------- CoNLL-U


def label_field(column: str | None) -> int:
    """The CoNLL-U field (0-based) holding the tags: upos (default), xpos, feats, deprel or a number."""
    name = (column or "upos").lower()
    if name in CONLLU_LABELS:
        return CONLLU_LABELS[name] - 1
    if name.isdigit() and 2 < int(name) <= 10:
        return int(name) - 1
    raise UsageError(f"--label-column {column!r}: for CoNLL-U, one of {', '.join(CONLLU_LABELS)} or a "
                     "field number 3-10")  # fmt: skip


def read_conllu(path: Path, label: int, on_error: str) -> Split:
    """Sentences of a CoNLL-U file, as UD specifies it: `#` comments (`# text = ...` included) are not
    words; a blank line ends a sentence; a multiword token `1-2` is a surface form whose words (1, 2)
    follow on their own lines and carry the tags, so its line is passed over; an empty node `1.1`
    (enhanced graphs) is no word of the sentence. Word ids must count 1, 2, 3 ... in each sentence."""
    split, stats = Split(str(path), []), ReadStats()
    faults = Faults(path, on_error, split.skips)
    words: list[tuple[str, str, int]] = []
    void = False  # a fault in the sentence being read: under skip it is left out whole

    def finish() -> None:
        nonlocal void
        if words and not void:
            split.examples.append(Sentence(*map(tuple, zip(*words, strict=True))))
        words.clear()
        void = False

    for number, line in read_lines(path, stats):
        if not line.strip():
            finish()
            continue
        if line.startswith("#") or void:
            continue
        cols = line.split("\t")
        problem = None
        if len(cols) != 10:
            problem = f"{len(cols)} tab-separated fields, CoNLL-U has 10"
        elif RANGE_ID.match(cols[0]) or EMPTY_ID.match(cols[0]):
            continue  # a multiword token's surface form, or an empty node: not a tagged word
        elif not WORD_ID.match(cols[0]):
            problem = f"word id {cols[0]!r} is not a number, a range (1-2) or an empty node (1.1)"
        elif int(cols[0]) != len(words) + 1:
            problem = f"word id {cols[0]} where {len(words) + 1} comes next"
        elif not cols[1]:
            problem = "empty word form"
        elif cols[label] in ("", "_"):
            problem = f"word {cols[1]!r} has no {CONLLU_FIELDS[label].upper()} ('{cols[label]}')"
        if problem is not None:
            faults.fault("malformed_line", number, problem)
            void = True
            continue
        words.append((cols[1], cols[label], number))
    finish()
    split.invalid_utf8 = stats.invalid_utf8
    split.fields = f"form -> {CONLLU_FIELDS[label]}"
    return split


# ---------------------------------------------------------------- tables: TSV, CSV, JSONL


@dataclass(frozen=True)
class Columns:
    """Which columns hold the text, the second text and the label (header names, or 0-based numbers)."""

    text: str | int
    text_b: str | int | None
    label: str | int

    @staticmethod
    def name(column: str | int) -> str:
        return f"column {column + 1}" if isinstance(column, int) else repr(column)

    def describe(self) -> str:
        texts = self.name(self.text) + (f" + {self.name(self.text_b)}" if self.text_b is not None else "")
        return f"{texts} -> {self.name(self.label)}"


def _find(header: list[str], candidates: tuple, what: str, option: str, path: Path) -> list:
    lowered = [h.strip().lower() for h in header]
    found = [c for c in candidates if all(n in lowered for n in (c if isinstance(c, tuple) else (c,)))]
    if len(found) > 1:
        shown = " and ".join(repr(f) for f in found)
        raise UsageError(f"{path}: {what} is ambiguous ({shown}); name it with {option}")
    return found


def _column(given: str, header: list[str] | None, path: Path, option: str) -> str | int:
    """A column a user named: a header name (any case), or a number from 1."""
    if header is not None:
        lowered = [h.strip().lower() for h in header]
        if given.strip().lower() in lowered:
            return header[lowered.index(given.strip().lower())]
    if given.isdigit() and int(given) >= 1:
        if header is not None and int(given) > len(header):
            raise UsageError(f"{path}: {option} {given}: the header has {len(header)} columns")
        return int(given) - 1
    shown = f" (columns: {', '.join(header)})" if header is not None else " (no header: give a number from 1)"
    raise UsageError(f"{path}: {option} {given!r}: no such column{shown}")


def choose_columns(header: list[str] | None, path: Path, text: str | None, pair: str | None,
                   label: str | None) -> Columns:  # fmt: skip
    """The columns named by the options, else recognised from the header (GLUE's names and the usual
    others); without a header every column must be named by number."""

    def exact(name: str) -> str:  # a recognised lower-case name as the header spells it
        return next(h for h in header or [] if h.strip().lower() == name)

    if text is not None:
        text_col = _column(text, header, path, "--text-column")
        text_b = _column(pair, header, path, "--pair-column") if pair is not None else None
    elif header is None:
        raise UsageError(f"{path}: no header; name the columns by number (--text-column N [--pair-column N] "
                         "--label-column N)")  # fmt: skip
    elif pairs := _find(header, PAIR_NAMES, "the sentence pair", "--text-column/--pair-column", path):
        text_col, text_b = exact(pairs[0][0]), exact(pairs[0][1])
    elif singles := _find(header, TEXT_NAMES, "the text column", "--text-column", path):
        text_col, text_b = exact(singles[0]), None
    else:
        raise UsageError(f"{path}: no column named like a sentence (columns: {', '.join(header)}); name it "
                         "with --text-column")  # fmt: skip
    if label is not None:
        label_col = _column(label, header, path, "--label-column")
    elif header is None:
        raise UsageError(f"{path}: no header; name the label column by number (--label-column N)")
    elif labels := _find(header, LABEL_NAMES, "the label column", "--label-column", path):
        label_col = exact(labels[0])
    else:
        raise UsageError(f"{path}: no label column (columns: {', '.join(header)}); name it with "
                         "--label-column (a test file without labels cannot be scored)")  # fmt: skip
    return Columns(text_col, text_b, label_col)


def _records(path: Path, fmt: str, stats: ReadStats,
             faults: Faults) -> Iterator[tuple[int, list[str] | dict]]:  # fmt: skip
    """(line, fields) of a TSV/CSV file (a list, the header first when there is one) or (line, object)
    of a JSONL file. TSV is split at every tab with no quoting, as GLUE's own reader does (its files hold
    unbalanced quotes); CSV follows RFC 4180 quoting, a quoted field may span lines."""
    lines = read_lines(path, stats)
    if fmt == "tsv":
        for number, line in lines:
            if line.strip():
                yield number, line.split("\t")
    elif fmt == "csv":
        numbers: list[int] = []

        def feed() -> Iterator[str]:
            for number, line in lines:
                numbers.append(number)
                yield line + "\n"

        try:
            for fields in csv.reader(feed()):
                if any(f.strip() for f in fields):
                    yield numbers[-1], fields
        except csv.Error as error:
            raise DataError(f"{path}:{numbers[-1] if numbers else 1}: not CSV ({error})") from None
    else:
        for number, line in lines:
            if not line.strip():
                continue
            try:
                record = parse_json(line, "")
            except DataError as error:  # malformed, or nested too deeply
                faults.fault("malformed_line", number, f"not JSON ({str(error).removeprefix(': ')})")
                continue
            if not isinstance(record, dict):
                faults.fault("malformed_line", number, "not a JSON object")
                continue
            yield number, record


def _value(record: list[str] | dict, column: str | int, header: list[str] | None) -> object:
    if isinstance(record, dict):
        return record.get(column) if isinstance(column, str) else None
    index = header.index(column) if isinstance(column, str) else column
    return record[index] if index < len(record) else None


def _text(value: object) -> str | None:
    """A label or text as a string: JSON numbers and booleans as their text (1, not 1.0), else None."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(int(value)) if float(value).is_integer() else str(value)
    return value if isinstance(value, str) else None


def read_table(path: Path, fmt: str, settings) -> Split:
    """Rows of a TSV, CSV or JSONL file, with their columns chosen once from the header (or the first
    object's keys). A row with another number of fields than the header (or, without one, the first
    row), an object without a chosen key, a text that is not a string or an empty label is a fault."""
    split, stats = Split(str(path), []), ReadStats()
    faults = Faults(path, settings.on_error, split.skips)
    header: list[str] | None = None
    columns: Columns | None = None
    width = None
    for number, record in _records(path, fmt, stats, faults):
        if columns is None:
            if isinstance(record, dict):
                header = list(record)
            elif settings.header:
                header = [h.strip() for h in record]
            columns = choose_columns(header, path, settings.text_column, settings.pair_column,
                                     settings.label_column)  # fmt: skip
            split.fields = columns.describe()
            if isinstance(record, list):
                width = len(record)
                if header is not None:
                    continue
        if isinstance(record, list) and len(record) != width:
            faults.fault("wrong_field_count", number, f"{len(record)} fields, the "
                         f"{'header' if header else 'first row'} has {width}")  # fmt: skip
            continue
        text, text_b, label = (_text(_value(record, c, header)) if c is not None else None
                               for c in (columns.text, columns.text_b, columns.label))  # fmt: skip
        problem = None
        for column, value in ((columns.text, text), (columns.text_b, text_b)):
            if column is not None and value is None:
                problem = f"no text in {Columns.name(column)}"
        if problem is None and not (label or "").strip():
            problem = f"no label in {Columns.name(columns.label)}"
        if problem is not None:
            faults.fault("malformed_line", number, problem)
            continue
        split.examples.append(Row(text, text_b, label.strip(), number))
    if columns is None:
        raise DataError(f"{path}: no rows")
    split.invalid_utf8 = stats.invalid_utf8
    return split


# ---------------------------------------------------------------- the task


def read_split(path: str | Path, settings) -> tuple[str, Split]:
    path = Path(path)
    if not storage.is_file(path):
        shown = storage.url(path)
        raise InputError(f"{shown}: no such file" if not storage.exists(path) else f"{shown}: not a file")
    fmt = file_format(path, settings.format)
    if fmt == "conllu":
        return "tag", read_conllu(path, label_field(settings.label_column), settings.on_error)
    return "classify", read_table(path, fmt, settings)


def read_task(settings) -> TaskData:
    """The train, dev (and test) files of `settings` (trainer.evaluate.settings.EvalSettings), checked."""
    kind, train = read_split(settings.train, settings)
    others = {name: read_split(path, settings) for name, path in (("dev", settings.dev),
              ("test", settings.test)) if path}  # fmt: skip
    for other, split in others.values():
        if other != kind:
            raise UsageError(f"{split.path}: a {other} file, but the training file is a {kind} file")
    if settings.task not in ("auto", kind):
        raise UsageError(f"--task {settings.task}: {settings.train} is a {kind} file (CoNLL-U: tag; TSV, "
                         "CSV, JSONL: classify)")  # fmt: skip
    if not train.examples:
        raise DataError(f"{train.path}: no examples")
    labels = tuple(sorted({label for e in train.examples for label in _labels(e)}))
    if len(labels) < 2:
        raise DataError(f"{train.path}: only one label ({labels[0]!r}); nothing to learn")
    data = TaskData(kind, labels, train, *(split for _, split in others.values()))
    data.pair = kind == "classify" and all(e.text_b is not None for e in train.examples)
    known = set(labels)
    for split in data.scored.values():
        check_labels(split, known, Faults(Path(split.path), settings.on_error, split.skips))
        if not split.examples:
            raise DataError(f"{split.path}: no examples left to score")
    return data


def _labels(example: Example) -> tuple[str, ...]:
    return example.labels if isinstance(example, Sentence) else (example.label,)


def check_labels(split: Split, known: set[str], faults: Faults) -> None:
    """A scored label the training file never has: a fault. Under skip the word (or row) is left out of
    the score: a tagging sentence keeps its other words, the unknown one gets no label."""
    kept: list[Example] = []
    for example in split.examples:
        if isinstance(example, Row):
            if example.label in known:
                kept.append(example)
            else:
                faults.fault("unknown_label", example.line, f"label {example.label!r} is not in the training "
                             "data")  # fmt: skip
            continue
        labels = list(example.labels)
        for i, label in enumerate(labels):
            if label not in known:
                word = example.words[i]
                faults.fault("unknown_label", example.lines[i], f"label {label!r} of word {word!r} is not in "
                             "the training data")  # fmt: skip
                labels[i] = ""  # no label: not scored
        kept.append(Sentence(example.words, tuple(labels), example.lines))
    split.examples = kept


# ---------------------------------------------------------------- baselines


def most_frequent_baseline(data: TaskData) -> dict[str, float]:
    """Accuracy of the cheapest model on each scored split. Tagging: each word's most frequent tag in the
    training data (its lower-cased form's when the exact form is unseen; the most frequent tag overall when
    both are), ties by label order. Classification: the training data's most frequent label."""
    if data.kind == "classify":
        counts = Counter(e.label for e in data.train.examples)
        majority = max(sorted(counts), key=counts.__getitem__)
        return {name: accuracy([majority == e.label for e in s.examples]) for name, s in data.scored.items()}
    by_form: dict[str, Counter] = {}
    by_lower: dict[str, Counter] = {}
    overall: Counter = Counter()
    for sentence in data.train.examples:
        for word, label in zip(sentence.words, sentence.labels, strict=True):
            by_form.setdefault(word, Counter())[label] += 1
            by_lower.setdefault(word.lower(), Counter())[label] += 1
            overall[label] += 1

    def best(counts: Counter) -> str:
        return max(sorted(counts), key=counts.__getitem__)

    table = {form: best(c) for form, c in by_form.items()}
    lower = {form: best(c) for form, c in by_lower.items()}
    default = best(overall)
    scores = {}
    for name, split in data.scored.items():
        hits = [(table.get(w) or lower.get(w.lower()) or default) == label
                for s in split.examples for w, label in zip(s.words, s.labels, strict=True) if label]
        scores[name] = accuracy(hits)
    return scores


def accuracy(hits: list[bool]) -> float:
    return sum(hits) / len(hits) if hits else 0.0
