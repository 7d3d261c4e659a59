"""The corpus-wide phases of curate: duplicate pairs found key by key, then clusters.

Keys are spilled per chunk (analyse.py) and grouped here by band, as datatrove's MinHash stages do: a task
takes one band (or the exact keys, or the line keys) and one bucket of key values (`key % buckets`), gathers
that slice from every chunk, sorts it, and turns each run of equal keys into pairs (the run's first
document, each other one). A near-duplicate candidate is verified: its signature must agree with the first
document's on at least `threshold` of the permutations. Memory is one bucket of one band (16 bytes a
document), and the signatures of the candidates; the number of buckets grows with the corpus.

`cluster` joins the pairs (exact and near) into clusters, union-find style with numpy: every document ends
labelled by the least document number of its cluster, which is the one kept (the first in reading order: the
choice depends on nothing else, so not on workers or engine). A removed document is an exact duplicate when
its exact key equals the kept one's (through exact pairs), else a near-duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from corpusprep.curate.analyse import keys_path
from corpusprep.curate.minhash import similarity
from corpusprep.engine import storage
from corpusprep.engine.executor import Task

DOCS_PER_BUCKET = 2**21  # documents' keys a task sorts at once (32 MB); more documents, more buckets


def bucket_count(documents: int) -> int:
    return max(1, -(-documents // DOCS_PER_BUCKET))


@dataclass(frozen=True)
class PairArgs:
    kind: str  # "near" (with `band`), "exact", "lines"
    band: int
    bucket: int
    buckets: int
    work: Path
    chunks: int
    starts: tuple[int, ...]  # each chunk's first document number
    threshold: float
    removed: Path | None = None  # lines: the clusters' decisions (removed documents have no lines to keep)


def pairs_path(work: Path, kind: str, band: int, bucket: int) -> Path:
    return work / "pairs" / f"{kind}-b{band:03d}-k{bucket:05d}.npy"


def load_npz(path: Path, *names: str) -> list[np.ndarray]:
    with storage.open_file(path, "rb") as f, np.load(f, allow_pickle=False) as z:
        return [z[name] for name in names]


def save_npy(path: Path, array: np.ndarray) -> None:
    with storage.atomic_open(path, "wb") as f:
        np.save(f, array, allow_pickle=False)


def load_npy(path: Path) -> np.ndarray:
    with storage.open_file(path, "rb") as f:
        return np.load(f, allow_pickle=False)


def _gather(args: PairArgs) -> tuple[np.ndarray, np.ndarray]:
    """(keys [n, k] uint64, docs [n]) of this task's bucket, from every chunk."""
    names = {"near": (f"band{args.band}", "near_docs"), "exact": ("exact", "exact_docs"),
             "lines": ("lines", None)}[args.kind]  # fmt: skip
    keys, docs = [], []
    for chunk in range(args.chunks):
        found = load_npz(keys_path(args.work, chunk), *[n for n in names if n])
        key = found[0].reshape(len(found[0]), -1)
        doc = found[1] if names[1] else key[:, 1].astype(np.int64)
        key = key[:, :1] if args.kind == "lines" else key
        mine = key[:, 0] % np.uint64(args.buckets) == np.uint64(args.bucket)
        keys.append(key[mine])
        docs.append(doc[mine])
    width = 2 if args.kind == "exact" else 1
    return (np.concatenate(keys) if keys else np.empty((0, width), np.uint64),
            np.concatenate(docs) if docs else np.empty(0, np.int64))


def runs(keys: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """int64 [m, 2]: (first, other) for each run of equal keys, the first the least document number."""
    if not len(docs):
        return np.empty((0, 2), np.int64)
    order = np.lexsort((docs, *keys.T[::-1]))
    keys, docs = keys[order], docs[order]
    same = np.all(keys[1:] == keys[:-1], axis=1)
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    first = np.repeat(docs[starts], np.diff(np.append(starts, len(docs))))
    pairs = np.stack([first, docs], axis=1)
    return pairs[pairs[:, 0] != pairs[:, 1]]


def pairs_task(task: Task) -> dict[str, Any]:
    args: PairArgs = task.args
    keys, docs = _gather(args)
    if args.kind == "lines":
        return _line_task(args, keys, docs)
    pairs = runs(keys, docs)
    candidates = len(pairs)
    if args.kind == "near" and len(pairs):
        pairs = pairs[_verified(args, pairs)]
    save_npy(pairs_path(args.work, args.kind, args.band, args.bucket), pairs)
    return {f"{args.kind}_candidates": candidates, f"{args.kind}_pairs": int(len(pairs))}


def _verified(args: PairArgs, pairs: np.ndarray) -> np.ndarray:
    """Which candidate pairs' signatures agree on at least `threshold` of the permutations."""
    needed = np.unique(pairs)
    chunk_of = np.searchsorted(np.asarray(args.starts), needed, side="right") - 1
    rows = {}
    for chunk in np.unique(chunk_of).tolist():
        near_docs, signatures = load_npz(keys_path(args.work, chunk), "near_docs", "signatures")
        want = needed[chunk_of == chunk]
        at = np.searchsorted(near_docs, want)
        rows.update(zip(want.tolist(), signatures[at], strict=True))
    a = np.stack([rows[d] for d in pairs[:, 0].tolist()])
    b = np.stack([rows[d] for d in pairs[:, 1].tolist()])
    return similarity(a, b) >= args.threshold


def _line_task(args: PairArgs, keys: np.ndarray, docs: np.ndarray) -> dict[str, Any]:
    """Lines repeated across the documents dedup keeps: (document, line key) to take out, in every document
    but the first that holds the line (a line repeated inside one document is left alone)."""
    removed = load_npz(args.removed, "removed")[0]
    alive = ~np.isin(docs, removed)
    keys, docs = keys[alive][:, 0], docs[alive]
    order = np.lexsort((docs, keys))
    keys, docs = keys[order], docs[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else starts_empty()
    owner = np.repeat(docs[starts], np.diff(np.append(starts, len(docs))))
    take = docs != owner
    taken = np.stack([docs[take].astype(np.uint64), keys[take]], axis=1) if take.any() else np.empty(
        (0, 2), np.uint64)
    save_npy(pairs_path(args.work, "lines", 0, args.bucket), taken)
    return {"repeated_lines": int(len(taken))}


def starts_empty() -> np.ndarray:
    return np.empty(0, np.int64)


def components(n: int, pairs: np.ndarray) -> np.ndarray:
    """int64 [n]: each document's cluster label, the least document number in its cluster (min-label
    propagation along the pairs with pointer jumping: a few sweeps of numpy over the pairs)."""
    label = np.arange(n, dtype=np.int64)
    if not len(pairs):
        return label
    a, b = pairs[:, 0], pairs[:, 1]
    while True:
        least = np.minimum(label[a], label[b])
        np.minimum.at(label, a, least)
        np.minimum.at(label, b, least)
        while not np.array_equal(jumped := label[label], label):
            label = jumped
        if np.array_equal(label[a], label[b]):
            return label


def load_pairs(work: Path, kind: str, bands: int, buckets: int) -> np.ndarray:
    found = [load_npy(pairs_path(work, kind, band, bucket))
             for band in range(bands) for bucket in range(buckets)]  # fmt: skip
    return np.concatenate(found) if found else np.empty((0, 2), np.int64)


def decisions_path(work: Path) -> Path:
    return work / "decisions.npz"


def cluster(work: Path, documents: int, bands: int, buckets: int, near: bool, exact: bool) -> dict[str, Any]:
    """Join the pairs into clusters; write `decisions.npz`: `removed` (sorted), the `kept` document of each
    and whether it is an `exact` duplicate of it."""
    exact_pairs = load_pairs(work, "exact", 1, buckets) if exact else np.empty((0, 2), np.int64)
    near_pairs = load_pairs(work, "near", bands, buckets) if near else np.empty((0, 2), np.int64)
    label = components(documents, np.concatenate([exact_pairs, near_pairs]))
    removed = np.flatnonzero(label != np.arange(documents))
    kept = label[removed]
    same = components(documents, exact_pairs)
    arrays = {"removed": removed, "kept": kept, "exact": same[removed] == same[kept]}
    with storage.atomic_open(decisions_path(work), "wb") as f:
        np.savez(f, **arrays)
    return {"clusters": int(len(np.unique(kept))), "removed": int(len(removed))}
