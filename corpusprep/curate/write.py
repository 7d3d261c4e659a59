"""The write phase of curate: one task per chunk writes its kept documents (`kept/part-NNNNN.jsonl` or
`.parquet`: `id`, `text`, and with language identification `language`, `language_score`) and its removed
ones' records (`.work/removed/cNNNNNN.jsonl`, joined into `removed.jsonl` at the end), and counts them."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from corpusprep.curate import text as txt
from corpusprep.curate.analyse import analysis_path
from corpusprep.curate.chunks import chunk_path, ids_path, read_ipc
from corpusprep.curate.dedup import decisions_path, load_npy, load_npz, pairs_path
from corpusprep.curate.options import CurateOptions
from corpusprep.engine import storage
from corpusprep.engine.executor import OUTPUTS_KEY, Task

EXAMPLES = 3  # removed documents shown per reason and task (the report shows the first few)
SNIPPET = 160  # characters of a removed document in the report

KEPT_FIELDS = ("id", "text", "language", "language_score")


def kept_schema(languages: bool) -> pa.Schema:
    fields = [pa.field("id", pa.string(), nullable=False), pa.field("text", pa.string(), nullable=False)]
    if languages:
        fields += [pa.field("language", pa.string()), pa.field("language_score", pa.float32())]
    return pa.schema(fields)



@dataclass(frozen=True)
class WriteArgs:
    chunk: int
    starts: tuple[int, ...]
    work: Path
    out: Path
    options: CurateOptions
    examples: Path | None  # the evaluation examples' table, with --decontaminate
    line_buckets: int  # with --lines: the buckets of line keys to take out


def kept_name(chunk: int, fmt: str) -> str:
    return f"kept/part-{chunk:05d}.{fmt}"


def removed_part(work: Path, chunk: int) -> Path:
    return work / "removed" / f"c{chunk:06d}.jsonl"


class Duplicates:
    """The cluster decisions for one chunk's documents: which are removed, and for whom."""

    def __init__(self, work: Path, first: int, end: int, starts: tuple[int, ...]):
        removed, kept, exact = load_npz(decisions_path(work), "removed", "kept", "exact")
        lo, hi = np.searchsorted(removed, [first, end])
        self.kept = dict(zip(removed[lo:hi].tolist(), kept[lo:hi].tolist(), strict=True))
        self.exact = dict(zip(removed[lo:hi].tolist(), exact[lo:hi].tolist(), strict=True))
        self.work, self.starts, self._ids = work, starts, {}

    def id_of(self, doc: int) -> str:
        chunk = int(np.searchsorted(self.starts, doc, side="right")) - 1
        if chunk not in self._ids:
            self._ids[chunk] = read_ipc(ids_path(self.work, chunk)).column("id").to_pylist()
        return self._ids[chunk][doc - self.starts[chunk]]


def _repeated_lines(args: WriteArgs, first: int, end: int) -> dict[int, set[int]]:
    """With --lines: document -> the keys of its lines to take out."""
    out: dict[int, set[int]] = {}
    for bucket in range(args.line_buckets):
        taken = load_npy(pairs_path(args.work, "lines", 0, bucket))
        mine = (taken[:, 0] >= first) & (taken[:, 0] < end)
        for doc, key in taken[mine].tolist():
            out.setdefault(int(doc), set()).add(int(key))
    return out


def write_task(task: Task) -> dict[str, Any]:
    args: WriteArgs = task.args
    docs = read_ipc(chunk_path(args.work, args.chunk))
    analysis = read_ipc(analysis_path(args.work, args.chunk)).to_pylist()
    first = args.starts[args.chunk]
    end = first + len(analysis)
    dups = Duplicates(args.work, first, end, args.starts) if args.options.deduplicates else None
    lines = _repeated_lines(args, first, end) if args.line_buckets else {}
    examples = read_ipc(args.examples).to_pylist() if args.examples is not None else []
    stats = Counts()
    kept, removed = [], []
    for doc_id, text, row in zip(docs.column("id").to_pylist(), docs.column("text").to_pylist(), analysis,
                                 strict=True):
        text = row["text"] if row["text"] is not None else text
        record = _decide(row, doc_id, text, dups, lines, examples)
        stats.add(record, text, row, examples)
        if record.get("reason") is None or "paragraphs" in record:
            kept.append(_kept(doc_id, record.pop("_text", text), row, args.options))
        if record.get("reason") is not None:
            record.pop("_text", None)
            removed.append(record)
    outputs = _write(args, kept, removed)
    return {**stats.to_dict(), OUTPUTS_KEY: outputs}


def _decide(row: dict, doc_id: str, text: str, dups: Duplicates | None, lines: dict[int, set[int]],
            examples: list[dict]) -> dict:
    """The removed record of a document (`reason` None: kept; `_text`: its text after lines went)."""
    record: dict[str, Any] = {"id": doc_id, "reason": row["reason"]}
    if row["examples"]:
        example = examples[row["examples"][0]]
        record |= {"eval_file": example["file"], "eval_position": example["position"]}
    if row["reason"] is not None:
        if row["detail"]:
            record["detail"] = row["detail"]
        if row["reason"] == "language":
            record |= {"language": row["language"], "language_score": round(row["score"], 4)}
        return record
    if row["paragraphs"]:
        record |= {"reason": "contaminated", "paragraphs": row["paragraphs"]}
    doc = row["doc"]
    if dups is not None and doc in dups.kept:
        return {"id": doc_id, "reason": "exact-duplicate" if dups.exact[doc] else "near-duplicate",
                "kept": dups.id_of(dups.kept[doc])}
    if doc in lines:
        left = [line for line in text.split("\n") if txt.line_key(line) not in lines[doc]]
        if not any(line.strip() for line in left):
            return {"id": doc_id, "reason": "shared-lines"}
        record["_text"] = "\n".join(left)
    return record


def _kept(doc_id: str, text: str, row: dict, options: CurateOptions) -> dict:
    if not options.languages:
        return {"id": doc_id, "text": text}
    return {"id": doc_id, "text": text, "language": row["language"], "language_score": round(row["score"], 4)}


def _write(args: WriteArgs, kept: list[dict], removed: list[dict]) -> list[str]:
    fmt = args.options.format
    outputs = []
    if kept:
        name = kept_name(args.chunk, fmt)
        if fmt == "parquet":
            schema = kept_schema(bool(args.options.languages))
            table = pa.Table.from_pylist(kept, schema=schema)
            storage.write_table(table, args.out / name, compression="zstd", row_group_size=4096)
        else:
            with storage.atomic_open(args.out / name, "w", encoding="utf-8", newline="\n") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in kept)
        outputs.append(name)
    part = removed_part(args.work, args.chunk)
    with storage.atomic_open(part, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in removed)
    return [*outputs, part.relative_to(args.out).as_posix()]


class Counts:
    """A task's counts: documents in = kept + removed by reason; characters; languages of the kept; a few
    removed documents per reason; the evaluation examples found."""

    def __init__(self) -> None:
        self.documents = self.kept = self.chars_in = self.chars_kept = 0
        self.removed: Counter[str] = Counter()
        self.languages: Counter[str] = Counter()
        self.examples: dict[str, list] = {}
        self.found: set[int] = set()
        self.paragraphs = 0

    def add(self, record: dict, text: str, row: dict, examples: list[dict]) -> None:
        self.documents += 1
        self.chars_in += len(text)
        self.found.update(row["examples"])
        reason = record.get("reason")
        if reason is None or "paragraphs" in record:
            self.kept += 1
            self.chars_kept += len(record.get("_text", text))
            self.paragraphs += len(record.get("paragraphs", ()))
            if row["language"] is not None:
                self.languages[row["language"]] += 1
            return
        self.removed[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < EXAMPLES:
            shown.append({k: v for k, v in record.items() if not k.startswith("_")}
                         | {"text": " ".join(text[:SNIPPET].split())})

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "kept": self.kept, "removed": dict(sorted(self.removed.items())),
                "characters": {"in": self.chars_in, "kept": self.chars_kept},
                "languages": dict(sorted(self.languages.items())), "examples": self.examples,
                "found": sorted(self.found), "paragraphs_removed": self.paragraphs}
