"""The analysis phase of curate: one task per chunk decides what it can about each document on its own, and
computes what the corpus-wide phases need.

In order, the first rule that removes a document names its reason: decontamination (`contaminated`: the
evaluation examples it holds; with `paragraphs`, only those paragraphs go), language identification
(`language`), then each quality filter in the order given (its name). For the documents left (survivors) it
computes the exact-duplicate key, the MinHash signature and its LSH band keys, and (with `lines`) the keys of
its lines, all on the text as the earlier rules left it. Outputs, under `.work`: `analysis/cNNNNNN.arrow` (a
row per document) and `keys/cNNNNNN.npz` (the survivors' arrays; read back without pickle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from corpusprep.curate import language as langid
from corpusprep.curate import text as txt
from corpusprep.curate.chunks import chunk_path, read_ipc, write_ipc
from corpusprep.curate.contamination import EvalIndex
from corpusprep.curate.filters import get as get_filter
from corpusprep.curate.filters.base import Doc
from corpusprep.curate.minhash import MinHasher
from corpusprep.curate.options import CurateOptions
from corpusprep.engine import storage
from corpusprep.engine.executor import OUTPUTS_KEY, Task

ANALYSIS_SCHEMA = pa.schema([
    pa.field("doc", pa.int64(), nullable=False), pa.field("reason", pa.string()),
    pa.field("detail", pa.string()),
    pa.field("examples", pa.list_(pa.int64())), pa.field("paragraphs", pa.list_(pa.int64())),
    pa.field("language", pa.string()), pa.field("score", pa.float32()), pa.field("text", pa.string()),
])


@dataclass(frozen=True)
class AnalyseArgs:
    chunk: int
    start: int  # the global number of its first document
    work: Path
    options: CurateOptions
    index: Path | None  # the evaluation n-gram index (contamination.EvalIndex), with --decontaminate


def analysis_path(work: Path, chunk: int) -> Path:
    return work / "analysis" / f"c{chunk:06d}.arrow"


def keys_path(work: Path, chunk: int) -> Path:
    return work / "keys" / f"c{chunk:06d}.npz"


@dataclass
class Verdict:
    """One document's row of the analysis."""

    reason: str | None = None
    detail: str | None = None
    examples: list[int] = field(default_factory=list)
    paragraphs: list[int] = field(default_factory=list)
    language: str | None = None
    score: float | None = None
    text: str | None = None  # the text when a rule took lines out, else None


class Rules:
    """The per-document rules of `options`, with what they load once per task."""

    def __init__(self, options: CurateOptions, index: Path | None):
        self.options = options
        self.index = EvalIndex.load(index) if index is not None else None
        self.filters = [get_filter(name) for name in options.filters]

    def judge(self, text: str) -> Verdict:
        verdict = Verdict()
        if self.index is not None:
            text = self._decontaminate(text, verdict)
        if verdict.reason is None and self.options.languages:
            verdict.language, verdict.score = langid.identify(text)
            if verdict.language not in self.options.languages:
                verdict.reason, verdict.detail = "language", f"{verdict.language} ({verdict.score:.2f})"
        for rule in self.filters if verdict.reason is None else ():
            outcome = rule.apply(Doc(text))
            if outcome.remove is not None:
                verdict.reason, verdict.detail = rule.name, outcome.remove
                break
            if outcome.text is not None:
                text = verdict.text = outcome.text
        return verdict

    def _decontaminate(self, text: str, verdict: Verdict) -> str:
        """Whole document: any match removes it. With `paragraphs`: the matching paragraphs go."""
        if not self.options.paragraphs:
            verdict.examples = sorted(self.index.matches(txt.words(text)))
            if verdict.examples:
                verdict.reason = "contaminated"
            return text
        kept, found = [], set()
        for i, paragraph in enumerate(text.split("\n")):
            hits = self.index.matches(txt.words(paragraph))
            if hits:
                verdict.paragraphs.append(i)
                found |= hits
            else:
                kept.append(paragraph)
        verdict.examples = sorted(found)
        if verdict.paragraphs:
            if not any(p.strip() for p in kept):
                verdict.reason = "contaminated"
            else:
                text = verdict.text = "\n".join(kept)
        return text


def analyse_task(task: Task) -> dict[str, Any]:
    args: AnalyseArgs = task.args
    options = args.options
    table = read_ipc(chunk_path(args.work, args.chunk))
    texts = table.column("text").to_pylist()
    rules = Rules(options, args.index)
    hasher = MinHasher(options.permutations, options.bands, options.seed)
    verdicts = [rules.judge(text) for text in texts]
    docs = np.arange(args.start, args.start + len(texts), dtype=np.int64)
    keys = _keys(texts, verdicts, docs, hasher, options)
    write_ipc(analysis_path(args.work, args.chunk), pa.table({
        "doc": pa.array(docs.tolist(), pa.int64()), **{
            name: pa.array([getattr(v, name) for v in verdicts], ANALYSIS_SCHEMA.field(name).type)
            for name in ANALYSIS_SCHEMA.names if name != "doc"}}, schema=ANALYSIS_SCHEMA))
    with storage.atomic_open(keys_path(args.work, args.chunk), "wb") as f:
        np.savez(f, **keys)
    written = [analysis_path(args.work, args.chunk), keys_path(args.work, args.chunk)]
    return {"documents": len(texts), "survivors": int(len(keys["exact_docs"])),
            "line_keys": len(keys["lines"]),
            OUTPUTS_KEY: [p.relative_to(args.work.parent).as_posix() for p in written]}


def _keys(texts: list[str], verdicts: list[Verdict], docs: np.ndarray, hasher: MinHasher,
          options: CurateOptions) -> dict[str, np.ndarray]:
    """The survivors' exact keys, signatures (those with a word), band keys and line keys."""
    exact_docs, exact, near_docs, signatures, lines = [], [], [], [], []
    for doc, text, verdict in zip(docs.tolist(), texts, verdicts, strict=True):
        if verdict.reason is not None:
            continue
        text = verdict.text if verdict.text is not None else text
        exact_docs.append(doc)
        exact.append(txt.exact_key(text))
        if options.near:
            shingles = txt.ngram_hashes(txt.word_hashes(txt.words(text)), options.shingle, whole=True)
            if len(shingles):
                near_docs.append(doc)
                signatures.append(hasher.signature(shingles))
        if options.lines:
            lines += [(txt.line_key(line), doc) for line in text.split("\n")
                      if len(line.strip()) >= options.min_line_chars]
    sig = np.array(signatures, dtype=np.uint32).reshape(len(signatures), options.permutations)
    bands = hasher.band_keys(sig) if len(sig) else np.empty((0, options.bands), dtype=np.uint64)
    return {"exact_docs": np.array(exact_docs, dtype=np.int64),
            "exact": np.array(exact, dtype=np.uint64).reshape(len(exact), 2),
            "near_docs": np.array(near_docs, dtype=np.int64), "signatures": sig,
            **{f"band{b}": np.ascontiguousarray(bands[:, b]) for b in range(options.bands)},
            "lines": np.array(lines, dtype=np.uint64).reshape(len(lines), 2)}
