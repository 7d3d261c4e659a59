"""The sentences stage: documents -> (doc_id, sentences), and the two output formats it writes.

Parquet holds one row per sentence (doc_id, sentence_index, text): the same (doc_id, sentence_index) address
the pairs use for a segment's first sentence, so a pair can be traced back to its text with one join, and
rows stream out in bounded row groups however long a document is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

from corpusprep.engine import storage
from corpusprep.engine.files import write_json
from corpusprep.engine.records import load_record
from corpusprep.errors import UsageError
from corpusprep.read import Document
from corpusprep.read.formats import SUFFIX_FORMATS
from corpusprep.read.inputs import MARKER_SUFFIX

OUTPUT_FORMATS = ("text", "parquet")
SENTENCES_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("sentence_index", pa.uint32(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
    ]
)
ROW_GROUP = 64 * 1024  # sentences per Parquet row group: bounded memory, still large enough to scan fast


def output_format(output: Path, given: str | None) -> str:
    """--format, else by the output's extension as the readers tell formats (any case: `.PARQUET`, `.pq`)."""
    fmt = (given or ("parquet" if SUFFIX_FORMATS.get(output.suffix.lower()) == "parquet" else "text")).lower()
    if fmt not in OUTPUT_FORMATS:
        raise UsageError(f"--format {fmt!r}: choose from {', '.join(OUTPUT_FORMATS)}")
    return fmt


# A sentences output is one file, not an artifact directory with a manifest: how it was built is recorded
# beside it, in a hidden completion marker the readers skip, so that a rerun of the same command finds it
# up to date (as every artifact does) and a rerun with other inputs or options can say what changed.


def record_path(output: Path) -> Path:
    return output.with_name(f".{output.name}{MARKER_SUFFIX}")


def read_output_record(output: Path) -> dict | None:
    """The record of how `output` was built, when it describes this very file (size and modification time,
    as inputs are fingerprinted); None for a file corpusprep did not write, or that changed since."""
    record = load_record(record_path(output), "sentences_record", missing_ok=True)
    try:
        st = storage.stat(output)
    except OSError:
        return None
    return record if record is not None and record["output"] == [st.st_size, st.st_mtime_ns] else None


def write_output_record(output: Path, identity: dict, report: dict) -> None:
    st = storage.stat(output)
    write_json(record_path(output), {"identity": identity, "output": [st.st_size, st.st_mtime_ns],
                                     "report": report})


@dataclass
class SentenceStats:
    """documents == used + sum(skipped.values()); `presplit` counts used documents that arrived split."""

    documents: int = 0
    used: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    presplit: int = 0
    sentences: int = 0
    characters: int = 0  # of the documents' text, for throughput

    def to_dict(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "used": self.used,
            "skipped": dict(sorted(self.skipped.items())),
            "presplit": self.presplit,
            "sentences": self.sentences,
            "characters": self.characters,
        }


def split_documents(
    documents: Iterable[Document], split: Callable[[str], list[str]], stats: SentenceStats
) -> Iterator[tuple[str, list[str]]]:
    """(doc_id, sentences) for each document with at least one sentence; the others are counted as skipped.

    Documents that arrive split (`Document.sentences`, e.g. BERT format) keep their sentences; only blank
    ones are dropped, so every output sentence is stripped and non-empty.
    """
    for doc in documents:
        stats.documents += 1
        stats.characters += len(doc.text)
        if doc.sentences is not None:
            sentences = [s.strip() for s in doc.sentences if s and not s.isspace()]
        else:
            sentences = split(doc.text)
        if not sentences:
            stats.skipped["no_sentences"] += 1
            continue
        stats.used += 1
        stats.presplit += doc.sentences is not None
        stats.sentences += len(sentences)
        yield doc.id, sentences


def write_text(path: str | Path, documents: Iterable[tuple[str, list[str]]]) -> None:
    """Google's BERT input format in a file (atomically): see write_sentences."""
    with storage.atomic_open(path, "w", encoding="utf-8", newline="\n") as out:
        write_sentences(out, documents)


def write_sentences(out: TextIO, documents: Iterable[tuple[str, list[str]]]) -> None:
    """Google's BERT input format: one sentence per line, a blank line between documents."""
    first = True
    for _, sentences in documents:
        if not first:
            out.write("\n")
        first = False
        # A pre-split sentence cannot hold "\n" (it came from a line), a split one never does; the
        # replace keeps the line format intact whatever a custom splitter returns.
        out.write("\n".join(s.replace("\n", " ") for s in sentences))
        out.write("\n")


def write_parquet(path: str | Path, documents: Iterable[tuple[str, list[str]]]) -> None:
    """One row per sentence with SENTENCES_SCHEMA, zstd-compressed, in row groups of ROW_GROUP sentences."""
    with storage.parquet_writer(path, SENTENCES_SCHEMA, compression="zstd") as writer:
        ids: list[str] = []
        indices: list[int] = []
        texts: list[str] = []
        for doc_id, sentences in documents:
            ids.extend([doc_id] * len(sentences))
            indices.extend(range(len(sentences)))
            texts.extend(sentences)
            if len(texts) >= ROW_GROUP:
                writer.write_table(_table(ids, indices, texts))
                ids, indices, texts = [], [], []
        if texts:
            writer.write_table(_table(ids, indices, texts))


def _table(ids: list[str], indices: list[int], texts: list[str]) -> pa.Table:
    return pa.table(
        [pa.array(ids, pa.string()), pa.array(indices, pa.uint32()), pa.array(texts, pa.string())],
        schema=SENTENCES_SCHEMA,
    )
