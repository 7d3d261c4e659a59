"""Tables -> rows of text (or a pair of texts) and a label: TSV, CSV and JSONL, GLUE's layouts as they are.

The text, second text and label columns are named by the settings or recognised from the header (GLUE's
names and the usual others; a file matching more than one of a kind is ambiguous: name the column).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from corpusprep.engine.records import parse_json
from corpusprep.errors import DataError, UsageError
from corpusprep.read.document import ReadStats
from trainer.evaluate.data import Faults, Row, Split, read_lines

# Column names recognised in a header (case-insensitive).
LABEL_NAMES = ("label", "gold_label", "quality", "is_duplicate", "labels", "class", "score")
PAIR_NAMES = (("sentence1", "sentence2"), ("#1 string", "#2 string"), ("question1", "question2"),
              ("question", "sentence"), ("premise", "hypothesis"), ("text_a", "text_b"))
TEXT_NAMES = ("sentence", "text", "text_a")



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
                   label: str | None) -> Columns:
    """The columns named by the options, else recognised from the header (GLUE's names and the usual
    others); without a header every column must be named by number."""

    def exact(name: str) -> str:  # a recognised lower-case name as the header spells it
        return next(h for h in header or [] if h.strip().lower() == name)

    if text is not None:
        text_col = _column(text, header, path, "--text-column")
        text_b = _column(pair, header, path, "--pair-column") if pair is not None else None
    elif header is None:
        raise UsageError(f"{path}: no header; name the columns by number (--text-column N [--pair-column N] "
                         "--label-column N)")
    elif pairs := _find(header, PAIR_NAMES, "the sentence pair", "--text-column/--pair-column", path):
        text_col, text_b = exact(pairs[0][0]), exact(pairs[0][1])
    elif singles := _find(header, TEXT_NAMES, "the text column", "--text-column", path):
        text_col, text_b = exact(singles[0]), None
    else:
        raise UsageError(f"{path}: no column named like a sentence (columns: {', '.join(header)}); name it "
                         "with --text-column")
    if label is not None:
        label_col = _column(label, header, path, "--label-column")
    elif header is None:
        raise UsageError(f"{path}: no header; name the label column by number (--label-column N)")
    elif labels := _find(header, LABEL_NAMES, "the label column", "--label-column", path):
        label_col = exact(labels[0])
    else:
        raise UsageError(f"{path}: no label column (columns: {', '.join(header)}); name it with "
                         "--label-column (a test file without labels cannot be scored)")
    return Columns(text_col, text_b, label_col)


def _records(path: Path, fmt: str, stats: ReadStats,
             faults: Faults) -> Iterator[tuple[int, list[str] | dict]]:
    """(line, fields) of a TSV/CSV file (a list, the header first when there is one) or (line, object)
    of a JSONL file. TSV is split at every tab with no quoting, as GLUE's own reader does (its files hold
    unbalanced quotes); CSV follows RFC 4180 quoting, a quoted field may span lines. A line over the line
    bound (None: a fault already) is left out."""
    lines = read_lines(path, stats, faults)
    if fmt == "tsv":
        for number, line in lines:
            if line is not None and line.strip():
                yield number, line.split("\t")
    elif fmt == "csv":
        numbers: list[int] = []

        def feed() -> Iterator[str]:
            for number, line in lines:
                numbers.append(number)
                yield (line or "") + "\n"

        try:
            for fields in csv.reader(feed()):
                if any(f.strip() for f in fields):
                    yield numbers[-1], fields
        except csv.Error as error:
            raise DataError(f"{path}:{numbers[-1] if numbers else 1}: not CSV ({error})") from None
    else:
        for number, line in lines:
            if line is None or not line.strip():
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
                                     settings.label_column)
            split.fields = columns.describe()
            if isinstance(record, list):
                width = len(record)
                if header is not None:
                    continue
        if isinstance(record, list) and len(record) != width:
            faults.fault("wrong_field_count", number, f"{len(record)} fields, the "
                         f"{'header' if header else 'first row'} has {width}")
            continue
        text, text_b, label = (_text(_value(record, c, header)) if c is not None else None
                               for c in (columns.text, columns.text_b, columns.label))
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
