"""The read phase of curate: one streaming pass over the input writes the documents in chunks (Arrow IPC
files under `.work/docs`), each with a global document number (reading order), so that every later phase
works chunk by chunk, in any process, in bounded memory. Chunks end after `docs_per_chunk` documents or
CHUNK_CHARS characters: what a task holds is bounded by bytes too. Chunking never depends on the workers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from corpusprep.curate.options import CurateOptions
from corpusprep.engine import arrow, storage
from corpusprep.engine.executor import OUTPUTS_KEY, Task
from corpusprep.engine.progress import Reporter
from corpusprep.read import iter_documents
from corpusprep.read.document import ReadStats

CHUNK_CHARS = 32 * 2**20


@dataclass(frozen=True)
class ReadArgs:
    inputs: tuple[str, ...]
    read_options: Any
    options: CurateOptions
    work: Path


def chunk_path(work: Path, chunk: int) -> Path:
    return work / "docs" / f"c{chunk:06d}.arrow"


def ids_path(work: Path, chunk: int) -> Path:
    return work / "docs" / f"c{chunk:06d}.ids.arrow"


def write_ipc(path: Path, table: pa.Table) -> None:
    with storage.atomic_open(path, "wb") as f, pa.ipc.new_file(f, table.schema) as writer:
        writer.write_table(table)


def read_ipc(path: Path) -> pa.Table:
    with storage.open_file(path, "rb") as f:
        return pa.ipc.open_file(f).read_all()


def read_stage(task: Task, reporter: Reporter) -> dict[str, Any]:
    """Stream the documents once into chunk files; return the chunks' first document numbers."""
    args: ReadArgs = task.args
    stats = ReadStats()
    ids: list[str] = []
    texts: list[str] = []
    starts: list[int] = []
    written: list[str] = []
    tick = reporter.phase("read", None, "docs")
    total = size = chars = 0

    def flush() -> None:
        chunk = len(starts)
        starts.append(total - len(ids))
        table = pa.table({"id": arrow.strings(ids), "text": arrow.strings(texts)})
        write_ipc(chunk_path(args.work, chunk), table)
        write_ipc(ids_path(args.work, chunk), pa.table({"id": arrow.strings(ids)}))
        written.extend(p.relative_to(args.work.parent).as_posix()
                       for p in (chunk_path(args.work, chunk), ids_path(args.work, chunk)))
        tick(None, {"documents": len(ids)}, False)
        ids.clear()
        texts.clear()

    for doc in iter_documents(list(args.inputs), args.read_options, stats):
        ids.append(doc.id)
        texts.append(doc.text)
        total += 1
        size += len(doc.text)
        if len(ids) == args.options.docs_per_chunk or size >= CHUNK_CHARS:
            flush()
            chars, size = chars + size, 0
    if ids:
        flush()
    reporter.finish("read")
    return {"chunks": len(starts), "documents": total, "starts": starts, "chars": chars + size,
            "read": stats.to_dict(), OUTPUTS_KEY: written}
