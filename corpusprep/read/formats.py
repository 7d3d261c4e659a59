"""One parser per input format. A parser turns lines (or Parquet batches) into records
`(position, text, sentences, problem)`: position is a 1-based line or row number, problem is
`(reason, detail)` for a record that cannot be a document. Parsers never count or skip: the reader does."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from corpusprep.read.document import ReadStats
from corpusprep.read.streams import COMPRESSION_SUFFIXES, Unreadable


class Record(NamedTuple):
    position: int
    text: str | None
    sentences: tuple[str, ...] | None = None
    problem: tuple[str, str] | None = None


SUFFIX_FORMATS = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet", ".pq": "parquet"
}
PARQUET_MAGIC = b"PAR1"
_BLANK_LINE = re.compile(r"(?:^|\n)[^\S\n]*(?:\n|$)")  # an empty or whitespace-only line
_TITLE = re.compile(r'\btitle="([^"]*)"')


def detect_format(name: str, head: bytes) -> str:
    """Format by extension (.jsonl, .parquet, ...), else by content: `<doc ` -> wiki, `{` -> jsonl,
    Parquet magic -> parquet, anything else -> text. BERT format cannot be told from text by content."""
    suffixes = [s.lower() for s in Path(name).suffixes]
    while suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes.pop()
    if suffixes and suffixes[-1] in SUFFIX_FORMATS:
        return SUFFIX_FORMATS[suffixes[-1]]
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if start.startswith(b"<doc "):
        return "wiki"
    if start.startswith(b"{"):
        return "jsonl"
    return "text"


def _blocks_of_lines(lines: Iterator[str]) -> Iterator[tuple[int, list[str]]]:
    """Runs of non-blank lines with the line number of their first line."""
    block: list[str] = []
    start = 0
    for lineno, line in enumerate(lines, 1):
        if line and not line.isspace():
            if not block:
                start = lineno
            block.append(line)
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block


def parse_text(lines: Iterator[str], path: Path, text_field: str, stats: ReadStats) -> Iterator[Record]:
    """Documents separated by blank lines; a document's lines joined by "\\n"."""
    for start, block in _blocks_of_lines(lines):
        yield Record(start, "\n".join(block))


def parse_bert(lines: Iterator[str], path: Path, text_field: str, stats: ReadStats) -> Iterator[Record]:
    """Google's BERT format: one sentence per line, a blank line between documents."""
    for start, block in _blocks_of_lines(lines):
        sentences = tuple(line.strip() for line in block)
        yield Record(start, "\n".join(sentences), sentences)


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


def parse_jsonl(lines: Iterator[str], path: Path, text_field: str, stats: ReadStats) -> Iterator[Record]:
    """One JSON object per line; blank lines are ignored. Bad lines become problems, not exceptions."""
    for lineno, line in enumerate(lines, 1):
        if not line or line.isspace():
            continue
        try:
            obj = json.loads(line)
        except ValueError as error:
            yield Record(lineno, None, problem=("invalid_json", f"not JSON ({error})"))
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
            yield Record(lineno, normalize_text(text))


def parse_parquet(raw: BinaryIO, path: Path, text_field: str, stats: ReadStats) -> Iterator[Record]:
    """Stream the text column batch by batch (one row group in memory at a time)."""
    import pyarrow as pa  # here, not at the top: only Parquet input needs it (~0.1 s of start-up)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

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
    batches = parquet.iter_batches(batch_size=8192, columns=[text_field])
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError) as error:
            raise Unreadable("unreadable", f"{path}: row {row + 1}: corrupt Parquet data: {error}") from error
        if batch is None:
            return
        column = batch.column(0)
        stats.bytes += pc.sum(pc.binary_length(column)).as_py() or 0
        for value in column.to_pylist():
            row += 1
            if value is None:
                yield Record(row, None, problem=("null_text", f"column {text_field!r} is null"))
            else:
                if "\0" in value:
                    value = _repair(value, f"{path}: row {row}", stats)
                yield Record(row, normalize_text(value))


def parse_wiki(lines: Iterator[str], path: Path, text_field: str, stats: ReadStats) -> Iterator[Record]:
    """WikiExtractor output: `<doc id=.. url=.. title=..>`, the title line (dropped when it repeats the
    title), one paragraph per line, `</doc>`; the tags may be indented. Text outside a doc block is counted
    as a warning."""
    paragraphs: list[str] = []
    title: str | None = None  # None: outside a doc block
    start = 0
    expect_title = False
    stray = 0
    for lineno, line in enumerate(lines, 1):
        # Tags may be indented (re-indented dumps): as `detect_format` does, look past leading whitespace.
        tag = line.lstrip() if line[:1].isspace() else line
        if tag.startswith(("<doc ", "<doc>")):
            if title is not None:  # an unterminated doc: keep it, but say so
                stats.warn("unterminated_doc", f"{path}:{start}: <doc> without </doc>")
                yield Record(start, "\n".join(paragraphs))
            match = _TITLE.search(line)
            title = html.unescape(match.group(1)) if match else ""
            paragraphs, start, expect_title = [], lineno, True
        elif tag.startswith("</doc>"):
            if title is None:
                stray += 1
                continue
            yield Record(start, "\n".join(paragraphs))
            title, paragraphs = None, []
        elif not line or line.isspace():
            continue
        elif title is None:
            stray += 1
        else:
            if expect_title:
                expect_title = False
                if line.strip() == title:
                    continue
            paragraphs.append(line)
    if title is not None:
        stats.warn("unterminated_doc", f"{path}:{start}: <doc> without </doc> at end of file")
        yield Record(start, "\n".join(paragraphs))
    if stray:
        stats.warn("text_outside_doc", f"{path}: {stray} line(s) outside <doc> blocks ignored")
