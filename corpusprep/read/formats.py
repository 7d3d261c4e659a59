"""One parser per input format. A parser turns lines (or Parquet batches) into records
`(position, text, sentences, problem, part, id)`: position is a 1-based line or row number, problem is
`(reason, detail)` for a record that cannot be a document, part is 0 for a whole document and 1, 2, ... for
the parts of one longer than the document size bound (`ReadOptions.max_document_bytes`), cut at line
boundaries (a longer line: at a space or character boundary, `streams.iter_lines`). Parsers never count or
skip: the reader does."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import BinaryIO, NamedTuple

from corpusprep.engine.records import parse_json
from corpusprep.errors import DataError
from corpusprep.read.document import FORMAT_TABLE, Format, ReadOptions, ReadStats
from corpusprep.read.streams import COMPRESSION_SUFFIXES, Piece, Unreadable, cut_bytes, numbered, utf8_size


class Record(NamedTuple):
    position: int
    text: str | None
    sentences: tuple[str, ...] | None = None
    problem: tuple[str, str] | None = None
    part: int = 0  # 0: a whole document; 1, 2, ...: a part of one cut at the size bound
    id: str | None = None  # the record's own `id` (JSONL field, Parquet column), where it has a string one


_BLANK_LINE = re.compile(r"(?:^|\n)[^\S\n]*(?:\n|$)")  # an empty or whitespace-only line
_TITLE = re.compile(r'\btitle="([^"]*)"')


class _Bounded:
    """The lines of one document as they are read, handed on in parts of at most `limit` bytes of text (its
    lines joined by "\\n"): `add` returns the part so far when the next line would pass the bound, `end` the
    rest. A part is (line number of its first line, its lines, part number: 0 when the document was never
    cut, else 1, 2, ...).

    `add` sees every line of a corpus, so it counts characters, not bytes, while the document is surely
    within the bound (a character is at most 4 bytes), and counts bytes exactly only beyond that."""

    def __init__(self, limit: int):
        self.room = limit + 1  # the lines' bytes and a "\\n" after each: the text's bytes + 1
        self.quick = limit // 4  # characters (and "\\n"s) below which the text is surely within the bound
        self.lines: list[str] = []
        self.chars = self.size = self.start = self.parts = 0

    def add(self, lineno: int, line: str) -> tuple[int, list[str], int] | None:
        if self.chars + len(line) < self.quick:
            self.chars += len(line) + 1
            if not self.lines:
                self.start = lineno
            self.lines.append(line)
            return None
        if self.chars < self.quick:  # the first line beyond: from here on this document counts bytes
            self.chars = self.quick
            self.size = sum(map(utf8_size, self.lines)) + len(self.lines)
        n = utf8_size(line) + 1
        done = None
        if self.lines and self.size + n > self.room:
            self.parts += 1
            done = (self.start, self._take(), self.parts)
        if not self.lines:
            self.start = lineno
        self.lines.append(line)
        self.size += n
        return done

    def paragraph_break(self) -> None:
        """One empty line between paragraphs (`document_per_file`), none at the start."""
        if self.lines and self.lines[-1]:
            self.lines.append("")
            self.chars += 1
            self.size += 1

    def end(self) -> tuple[int, list[str], int] | None:
        """The rest of the document (None when nothing is left); the next `add` starts a new one."""
        done = (self.start, self._take(), self.parts + 1 if self.parts else 0) if self.lines else None
        self.parts = self.chars = 0
        return done

    def _take(self) -> list[str]:
        lines = self.lines
        while lines and not lines[-1]:  # paragraphs: no empty line at the end of a part
            lines.pop()
        self.lines, self.size = [], 0
        return lines


def _blocks_of_lines(lines: Iterator[str], options: ReadOptions) -> Iterator[tuple[int, list[str], int]]:
    """Runs of non-blank lines, or with `document_per_file` all of the file's lines (one empty line between
    paragraphs), as (first line number, lines, part) within the document size bound. Lines are numbered as
    `streams.numbered` does, inline: this loop sees every line of a text corpus."""
    document = _Bounded(options.max_document_bytes)
    add, per_file = document.add, options.document_per_file
    lineno, continued = 0, False
    for line in lines:
        if not continued:
            lineno += 1
        continued = type(line) is Piece
        if line and not line.isspace():
            if (done := add(lineno, line)) is not None:
                yield done
        elif per_file:
            document.paragraph_break()
        elif (done := document.end()) is not None:
            yield done
    if (done := document.end()) is not None:
        yield done


def parse_text(lines: Iterator[str], path: Path, options: ReadOptions, stats: ReadStats) -> Iterator[Record]:
    """Documents separated by blank lines (or one a file); a document's lines joined by "\\n"."""
    for start, block, part in _blocks_of_lines(lines, options):
        yield Record(start, "\n".join(block), part=part)


def parse_bert(lines: Iterator[str], path: Path, options: ReadOptions, stats: ReadStats) -> Iterator[Record]:
    """Google's BERT format: one sentence per line, a blank line between documents (or one a file)."""
    for start, block, part in _blocks_of_lines(lines, options):
        sentences = tuple(line.strip() for line in block if line)
        yield Record(start, "\n".join(sentences), sentences, part=part)


def cut_text(text: str, limit: int) -> list[str]:
    """`text` (paragraphs a line) in parts of at most `limit` bytes, as `_Bounded` cuts a file's lines: at
    line boundaries, a longer line at a space or character boundary. One part when it fits."""
    if utf8_size(text) <= limit:
        return [text]
    document = _Bounded(limit)
    parts = []
    for line in text.split("\n"):
        pieces = [line] if utf8_size(line) <= limit else [p.decode() for p in cut_bytes(line.encode(), limit)]
        for piece in pieces:
            if (done := document.add(0, piece)) is not None:
                parts.append("\n".join(done[1]))
    if (done := document.end()) is not None:
        parts.append("\n".join(done[1]))
    return parts


def normalize_text(text: str) -> str:
    """Paragraphs separated by single "\\n": unify line endings, drop blank lines (cheap when clean)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _BLANK_LINE.search(text):
        text = "\n".join(line for line in text.split("\n") if line and not line.isspace())
    return text


def _repair(text: str, where: str, stats: ReadStats) -> str:
    """JSON escapes can produce what UTF-8 bytes cannot (NULs, lone surrogates): remove/replace, count."""
    if "\0" in text:
        stats.nul_bytes += text.count("\0")
        stats.warn("nul_bytes", f"{where}: NUL character(s) removed")
        text = text.replace("\0", "")
    try:
        text.encode()
    except UnicodeEncodeError:
        fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        count = fixed.count("\ufffd") - text.count("\ufffd")
        stats.invalid_utf8 += count
        stats.warn("invalid_utf8", f"{where}: {count} lone surrogate(s) replaced by U+FFFD")
        text = fixed
    return text


def parse_jsonl(lines: Iterator[str], path: Path, options: ReadOptions, stats: ReadStats) -> Iterator[Record]:
    """One JSON object per line; blank lines are ignored. Bad lines become problems, not exceptions. A line
    longer than the document size bound is one (`too_large`): it cannot be parsed without holding it."""
    text_field = options.text_field
    too_long = False  # inside a line that came in pieces
    for lineno, line in numbered(lines):
        if type(line) is Piece or too_long:
            too_long = type(line) is Piece
            if not too_long:  # its last piece
                yield Record(lineno, None, problem=(
                    "too_large", f"line longer than {options.max_document_bytes:,} bytes (--max-document-mb "
                                 f"{options.max_document_mb:g}): skipped unread; raise the bound to read it"))
            continue
        if not line or line.isspace():
            continue
        try:  # the records' parser: [[[[... thousands deep or 10^5 digits is a bad line, not a crash
            obj = parse_json(line, "")
        except DataError as error:
            yield Record(lineno, None, problem=("invalid_json", str(error).removeprefix(": ")))
            continue
        if not isinstance(obj, dict):
            yield Record(lineno, None, problem=("invalid_json", f"not a JSON object ({type(obj).__name__})"))
            continue
        if text_field not in obj:
            yield Record(lineno, None, problem=("missing_text_field", f"no field {text_field!r}"))
            continue
        text = obj[text_field]
        if text is None:
            yield Record(lineno, None, problem=("null_text", f"field {text_field!r} is null"))
        elif not isinstance(text, str):
            detail = f"field {text_field!r} is {type(text).__name__}, not a string"
            yield Record(lineno, None, problem=("non_string_text", detail))
        else:
            if "\\u" in line:  # only JSON escapes can smuggle in NULs or lone surrogates
                text = _repair(text, f"{path}:{lineno}", stats)
            doc_id = obj.get("id")  # used only for files whose ids are recorded (read.inputs.RecordedIds)
            yield Record(lineno, normalize_text(text), id=doc_id if isinstance(doc_id, str) else None)


def parse_parquet(raw: BinaryIO, path: Path, options: ReadOptions, stats: ReadStats) -> Iterator[Record]:
    """Stream the text column batch by batch (one row group in memory at a time); a value longer than the
    document size bound is cut into parts (it is in memory already, but what follows stays bounded)."""
    import pyarrow as pa  # here, not at the top: only Parquet input needs it (~0.1 s of start-up)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    text_field, limit = options.text_field, options.max_document_bytes
    try:
        parquet = pq.ParquetFile(raw)
    except (pa.ArrowException, OSError) as error:
        raise Unreadable("unreadable", f"{path}: not a readable Parquet file: {error}") from error
    schema = parquet.schema_arrow
    if text_field not in schema.names:
        raise Unreadable("missing_text_column", f"{path}: no column {text_field!r} (columns: "
                                                f"{', '.join(schema.names)})")
    kind = schema.field(text_field).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise Unreadable("bad_text_column", f"{path}: column {text_field!r} is {kind}, not a string")
    row = 0
    # the `id` column too where it is a string one: read.inputs.RecordedIds (curate's kept documents) use it
    with_ids = "id" in schema.names and text_field != "id" and pa.types.is_string(schema.field("id").type)
    batches = parquet.iter_batches(batch_size=8192, columns=[text_field, "id"] if with_ids else [text_field])
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError) as error:
            raise Unreadable("unreadable", f"{path}: row {row + 1}: corrupt Parquet data: {error}") from error
        if batch is None:
            return
        column = batch.column(0)
        stats.bytes += pc.sum(pc.binary_length(column)).as_py() or 0
        ids = batch.column(1).to_pylist() if with_ids else [None] * len(column)
        for value, doc_id in zip(column.to_pylist(), ids, strict=True):
            row += 1
            if value is None:
                yield Record(row, None, problem=("null_text", f"column {text_field!r} is null"))
            else:
                if "\0" in value:
                    value = _repair(value, f"{path}: row {row}", stats)
                parts = cut_text(normalize_text(value), limit)
                for part, text in enumerate(parts, 1):
                    yield Record(row, text, part=part if len(parts) > 1 else 0, id=doc_id)


def parse_wiki(lines: Iterator[str], path: Path, options: ReadOptions, stats: ReadStats) -> Iterator[Record]:
    """WikiExtractor output: `<doc id=.. url=.. title=..>`, the title line (dropped when it repeats the
    title), one paragraph per line, `</doc>`; the tags may be indented. Text outside a doc block is counted
    as a warning."""
    document = _Bounded(options.max_document_bytes)
    title: str | None = None  # None: outside a doc block
    start = 0
    expect_title = False
    stray = 0

    def record(done: tuple[int, list[str], int] | None) -> Record:
        """A part (at its first line; the first part and a whole document at their <doc> line)."""
        if done is None:
            return Record(start, "")  # an empty doc block: counted as such by the reader
        first, paragraphs, part = done
        return Record(start if part <= 1 else first, "\n".join(paragraphs), part=part)

    add, lineno, continued = document.add, 0, False
    for line in lines:  # numbered as `streams.numbered` does, inline: this loop sees every line of a dump
        if not continued:
            lineno += 1
        continued = type(line) is Piece
        # Tags may be indented (re-indented dumps): as `detect_format` does, look past leading whitespace.
        tag = line.lstrip() if line[:1].isspace() else line
        if tag.startswith(("<doc ", "<doc>")):
            if title is not None:  # an unterminated doc: keep it, but say so
                stats.warn("unterminated_doc", f"{path}:{start}: <doc> without </doc>")
                yield record(document.end())
            match = _TITLE.search(line)
            title = html.unescape(match.group(1)) if match else ""
            start, expect_title = lineno, True
        elif tag.startswith("</doc>"):
            if title is None:
                stray += 1
                continue
            yield record(document.end())
            title = None
        elif not line or line.isspace():
            continue
        elif title is None:
            stray += 1
        else:
            if expect_title:
                expect_title = False
                if line.strip() == title:
                    continue
            if (done := add(lineno, line)) is not None:
                yield record(done)
    if title is not None:
        stats.warn("unterminated_doc", f"{path}:{start}: <doc> without </doc> at end of file")
        yield record(document.end())
    if stray:
        stats.warn("text_outside_doc", f"{path}: {stray} line(s) outside <doc> blocks ignored")


# ---------------------------------------------------------------- the formats (document.FORMAT_TABLE)

SUFFIX_FORMATS = {suffix: f.name for f in FORMAT_TABLE.values() for suffix in f.suffixes}


def detect_format(name: str, head: bytes) -> str:
    """Format by the sign of a binary format (Parquet's magic), else by extension (.jsonl, .parquet, ...),
    else by the sign of a text format (`<doc ` -> wiki, `{` -> jsonl, after a BOM and blanks), else text.
    BERT format cannot be told from text by content."""
    formats = FORMAT_TABLE.values()
    suffixes = [s.lower() for s in Path(name).suffixes]
    while suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes.pop()
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    found = chain(
        (f for f in formats if f.binary and f.sign and head.startswith(f.sign)),
        (f for f in formats if suffixes and suffixes[-1] in f.suffixes),
        (f for f in formats if not f.binary and f.sign and start.startswith(f.sign)),
    )
    return next(found, FORMAT_TABLE["text"]).name


def parser(fmt: Format) -> Callable[..., Iterator[Record]]:
    """The format's parser: `fmt.parser`, a function of this module."""
    return globals()[fmt.parser]
