"""Read-stage values: a Document, the options saying how to read, the stats proving nothing was lost."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from corpusprep.errors import DataError, InputError, UsageError, printable
from corpusprep.settings import choice


@dataclass(frozen=True)
class Format:
    """An input format: its parser in formats.py and how `--input-format auto` knows its files (a name
    suffix, else the sign its first bytes start with). Adding a format: a parser in formats.py and one entry
    in FORMAT_TABLE."""

    name: str
    help: str  # what it is, in --input-format's help
    parser: str  # the name of its function in corpusprep/read/formats.py: (lines, path, options, stats)
    suffixes: tuple[str, ...] = ()  # lower case, before any compression suffix
    sign: bytes = b""  # what the file starts with (a BOM and leading blanks removed; a binary format: as is)
    binary: bool = False  # parsed from the uncompressed file, not lines; under auto its sign beats a suffix
    plain_text: bool = False  # no document boundaries of its own: --document-per-file applies
    # (reason, message) of the skip of a file without a document; None: an empty file
    no_documents: tuple[str, str] | None = None


FORMAT_TABLE = {f.name: f for f in (  # in the order of the choices in --help and messages
    # text: also what auto cannot place; bert: told from text only by the user
    Format("text", "blank-line separated documents", "parse_text", plain_text=True),
    Format("bert", "one sentence per line", "parse_bert", plain_text=True),
    Format("jsonl", "", "parse_jsonl", (".jsonl", ".ndjson", ".json"), b"{"),
    Format("parquet", "", "parse_parquet", (".parquet", ".pq"), b"PAR1", binary=True),
    Format("wiki", "WikiExtractor <doc> blocks", "parse_wiki", sign=b"<doc ",
           no_documents=("no_documents", "skipped: no <doc> blocks")),
)}
FORMATS = ("auto", *FORMAT_TABLE)  # auto: each file's from its name or first bytes (formats.detect_format)
FORMATS_HELP = ", ".join(  # --input-format's help: the table's names, each with its help where it has one
    ["auto (by extension and content)",
     *(f"{f.name} ({f.help})" if f.help else f.name for f in FORMAT_TABLE.values())]
)
ON_ERROR = ("auto", "skip", "fail")
# --document-per-file: plain text (auto: the files read as text)
PER_FILE_FORMATS = ("auto", *(name for name, f in FORMAT_TABLE.items() if f.plain_text))
# The document size bound (MB = 10^6 bytes). A longer document is cut into parts, so memory stays bounded
# whatever the shape of the input (one 1 GB line, 1 GB of lines without a blank one). 16 MB is 5x War and
# Peace and 10x the longest Wikipedia article: real documents are never cut; a part still costs a stage
# only a few hundred MB (build-pairs holds ~17 bytes per byte of a long document: BENCHMARKS.md).
MAX_DOCUMENT_MB = 16.0
MIN_DOCUMENT_MB = 0.001  # 1 kB: the bound must leave room for a line of text
CAP_DOCUMENT_MB = 1e6  # 1 TB: beyond any machine's memory, so no bound at all (inf, 1e300 refused)
MAX_EXAMPLES = 5  # examples kept per reason; counts stay exact

log = logging.getLogger("corpusprep.read")


@dataclass(frozen=True, slots=True)
class Document:
    """One document. `text` holds paragraphs separated by "\\n" (a hard sentence boundary for the splitter);
    `sentences` is set when the input was already split (BERT format), else None."""

    id: str
    text: str
    sentences: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ReadOptions:
    """How to read. `on_error`: auto = skip bad documents, fail on unreadable files; skip = skip both
    (counted); fail = fail on both. Empty documents and empty files are always skipped and counted."""

    format: str = "auto"
    text_field: str = "text"
    on_error: str = "auto"
    # documents longer than this many MB are cut into parts at line boundaries (`max_document_bytes`)
    max_document_mb: float = MAX_DOCUMENT_MB
    # plain text (text, bert, and the files auto reads as text): each file is one document, its paragraphs
    # (blank-line separated) kept apart by one empty line, instead of a document per paragraph
    document_per_file: bool = False

    def __post_init__(self) -> None:
        # a pipeline's [input] and the CLI take any case (`PARQUET`): one rule, `choice`
        object.__setattr__(self, "format", choice("input format", self.format, FORMATS, InputError))
        object.__setattr__(self, "on_error", choice("on-error policy", self.on_error, ON_ERROR))
        if not isinstance(self.text_field, str) or not self.text_field.strip():
            raise UsageError("text field must not be empty")
        mb = self.max_document_mb
        number = isinstance(mb, (int, float)) and not isinstance(mb, bool)
        if not number or not MIN_DOCUMENT_MB <= mb <= CAP_DOCUMENT_MB:
            raise UsageError(f"max_document_mb={mb!r}: must be a number of MB from {MIN_DOCUMENT_MB:g} to "
                             f"{CAP_DOCUMENT_MB:g}")
        if self.document_per_file and self.format not in PER_FILE_FORMATS:
            formats = ", ".join(PER_FILE_FORMATS)
            raise UsageError(f"document_per_file: for plain text only (input format {formats}), not "
                             f"{self.format}, whose files say where each document ends")

    @property
    def max_document_bytes(self) -> int:
        return int(self.max_document_mb * 1_000_000)


@dataclass
class ReadStats:
    """Exact counts of what was read and what was skipped, by reason, with a few examples of each.

    Invariants: documents_seen == documents + sum(skipped.values());
                files_seen == files + sum(skipped_files.values()).
    A document longer than the size bound counts once in `documents_cut` and is read as `document_parts`
    documents (each counted in documents_seen); a directory the walk passed over (a model or a corpusprep
    output inside a corpus) counts in `skipped_directories`."""

    files_seen: int = 0
    files: int = 0  # files read to the end
    bytes: int = 0  # bytes of text read (after decompression; Parquet: text column bytes)
    documents_seen: int = 0
    documents: int = 0  # documents yielded
    skipped: Counter[str] = field(default_factory=Counter)  # documents, by reason
    skipped_files: Counter[str] = field(default_factory=Counter)
    invalid_utf8: int = 0  # byte sequences replaced by U+FFFD
    nul_bytes: int = 0  # NUL bytes removed
    warnings: int = 0
    documents_cut: int = 0  # documents over the size bound, cut into parts
    document_parts: int = 0  # the parts they were cut into
    skipped_directories: Counter[str] = field(default_factory=Counter)  # by reason
    examples: dict[str, list[str]] = field(default_factory=dict)  # reason -> "file:position: detail"

    def note(self, kind: str, message: str) -> None:
        """Keep `message` as an example of `kind` (capped) and log it."""
        message = printable(message)  # a file name that is not UTF-8: as in its document ids
        kept = self.examples.setdefault(kind, [])
        if len(kept) < MAX_EXAMPLES:
            kept.append(message)
            log.warning(message)

    def skip_document(self, reason: str, message: str) -> None:
        self.skipped[reason] += 1
        self.note(reason, message)

    def skip_file(self, reason: str, message: str) -> None:
        self.skipped_files[reason] += 1
        self.note(reason, message)

    def skip_directory(self, reason: str, message: str) -> None:
        self.skipped_directories[reason] += 1
        self.note(reason, message)

    def warn(self, kind: str, message: str) -> None:
        self.warnings += 1
        self.note(kind, message)

    def merge(self, other: ReadStats) -> ReadStats:
        """Add another partition's stats to this one (examples stay capped)."""
        for name in ("files_seen", "files", "bytes", "documents_seen", "documents", "invalid_utf8",
                     "nul_bytes", "warnings", "documents_cut", "document_parts"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped.update(other.skipped)
        self.skipped_files.update(other.skipped_files)
        self.skipped_directories.update(other.skipped_directories)
        for kind, messages in other.examples.items():
            kept = self.examples.setdefault(kind, [])
            kept.extend(messages[: MAX_EXAMPLES - len(kept)])
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "files_seen": self.files_seen,
            "files": self.files,
            "skipped_files": dict(sorted(self.skipped_files.items())),
            "bytes": self.bytes,
            "documents_seen": self.documents_seen,
            "documents": self.documents,
            "skipped": dict(sorted(self.skipped.items())),
            "invalid_utf8": self.invalid_utf8,
            "nul_bytes": self.nul_bytes,
            "warnings": self.warnings,
            "documents_cut": self.documents_cut,
            "document_parts": self.document_parts,
            "skipped_directories": dict(sorted(self.skipped_directories.items())),
            "examples": {kind: list(messages) for kind, messages in sorted(self.examples.items())},
        }


UNK_WARN_RATE = 0.05  # more [UNK] than this: the text is not what the vocab was built for


def no_usable_documents(inputs: Any, read: dict[str, Any], skipped: dict[str, int] | None = None
                        ) -> DataError:
    """Zero documents used is an error, not an empty output: name the inputs and why everything was skipped
    (a wrong --input-format skips every document as invalid_json, say). `read`: ReadStats.to_dict()."""
    names = ", ".join(map(str, inputs)) if isinstance(inputs, (list, tuple)) else str(inputs)
    reasons = {**read.get("skipped", {}), **(skipped or {})}
    hint = "; wrong --input-format?" if reasons.get("invalid_json") or reasons.get("missing_field") else ""
    return DataError(f"no usable documents in {names} ({skip_summary(read, skipped)}){hint}")


def skip_summary(read: dict[str, Any], skipped: dict[str, int] | None = None) -> str:
    """'N read, skipped: n reason, ...; files skipped: n reason', from ReadStats.to_dict() (+ later skips)."""
    reasons = {**read.get("skipped", {}), **(skipped or {})}
    why = ", ".join(f"{n:,} {reason}" for reason, n in sorted(reasons.items()) if n)
    files = ", ".join(f"{n:,} {reason}" for reason, n in sorted(read.get("skipped_files", {}).items()) if n)
    why = "; ".join(part for part in (why and f"skipped: {why}", files and f"files skipped: {files}") if part)
    return f"{read.get('documents_seen', 0):,} read" + (f", {why}" if why else "")


def read_notes(read: dict[str, Any]) -> str:
    """What a summary line adds about the reading, from ReadStats.to_dict(): "; files skipped: 1 binary;
    directories skipped: 1 not_corpus; 2 documents cut into 9 parts (--max-document-mb)", or ""."""
    notes = [f"{what} skipped: " + ", ".join(f"{n:,} {reason}" for reason, n in sorted(counts.items()))
             for what, counts in (("files", read.get("skipped_files")), ("directories",
                                                                          read.get("skipped_directories")))
             if counts]
    if read.get("documents_cut"):
        notes.append(f"{read['documents_cut']:,} documents cut into {read['document_parts']:,} parts "
                     "(--max-document-mb)")
    return "".join(f"; {note}" for note in notes)


def unk_warning(unk_tokens: int, tokens: int, where: str) -> str | None:
    """A loud one-line warning when [UNK] passes UNK_WARN_RATE, with the likely causes; None below it."""
    rate = unk_tokens / max(tokens, 1)
    if rate <= UNK_WARN_RATE:
        return None
    return (f"{where}: {rate:.1%} of tokens are [UNK] (over {UNK_WARN_RATE:.0%}): likely a wrong "
            "--input-format, a vocab built for other text, or a --cased/uncased mismatch")
