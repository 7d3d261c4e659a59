"""Read-stage values: a Document, the options saying how to read, the stats proving nothing was lost."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from corpusprep.errors import DataError, InputError, UsageError, printable

FORMATS = ("auto", "text", "bert", "jsonl", "parquet", "wiki")
ON_ERROR = ("auto", "skip", "fail")
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

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise InputError(f"unknown input format {self.format!r} (choose from {', '.join(FORMATS)})")
        if self.on_error not in ON_ERROR:
            raise UsageError(f"unknown on-error policy {self.on_error!r} (choose from {', '.join(ON_ERROR)})")
        if not self.text_field:
            raise UsageError("text field must not be empty")


@dataclass
class ReadStats:
    """Exact counts of what was read and what was skipped, by reason, with a few examples of each.

    Invariants: documents_seen == documents + sum(skipped.values());
                files_seen == files + sum(skipped_files.values())."""

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

    def warn(self, kind: str, message: str) -> None:
        self.warnings += 1
        self.note(kind, message)

    def merge(self, other: ReadStats) -> ReadStats:
        """Add another partition's stats to this one (examples stay capped)."""
        for name in ("files_seen", "files", "bytes", "documents_seen", "documents", "invalid_utf8",
                     "nul_bytes", "warnings"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped.update(other.skipped)
        self.skipped_files.update(other.skipped_files)
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


def unk_warning(unk_tokens: int, tokens: int, where: str) -> str | None:
    """A loud one-line warning when [UNK] passes UNK_WARN_RATE, with the likely causes; None below it."""
    rate = unk_tokens / max(tokens, 1)
    if rate <= UNK_WARN_RATE:
        return None
    return (f"{where}: {rate:.1%} of tokens are [UNK] (over {UNK_WARN_RATE:.0%}): likely a wrong "
            "--input-format, a vocab built for other text, or a --cased/uncased mismatch")
