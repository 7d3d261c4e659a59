"""The corpus-wide phases of curate: duplicate pairs found key by key, then clusters.

Keys are spilled per chunk (analyse.py) and grouped here by band, as datatrove's MinHash stages do: a task
takes one band (or the exact keys, or the line keys) and one bucket of key values (`key % buckets`), gathers
that slice from every chunk and sorts it. A run of equal keys is a group of candidates:
- exact keys: every document of the run is a copy of its first (equal normalised texts are transitive);
- a band's keys: every pair of the run is a candidate, verified on its own (`verify_run`): the two signatures
  must agree on at least `threshold` of the permutations (an estimate of their Jaccard similarity). Each
  verified pair that joins two groups of the run is written (a spanning forest: the run's clusters, in fewer
  pairs), so a near-copy is found whatever else shares its bucket (not only against the run's first).
Memory is one bucket of one band: its keys and the signatures of its candidates (`bucket_count` sizes the
buckets so that this stays under BUCKET_BYTES on average whatever the corpus; one band value held by very
many documents, a text copied that often, still lands in one bucket).

`cluster` joins the pairs (exact and near, every band) into clusters (`components`: union-find as min-label
propagation over all pairs at once); every document ends labelled by the least document number of its
cluster, the one kept (the first in reading order: the choice depends on nothing else, so not on workers,
engine, chunking or buckets). A removed document is an exact duplicate when its exact key equals the kept
one's (through exact pairs), else a near-duplicate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from corpusprep.curate.analyse import keys_path
from corpusprep.engine import storage
from corpusprep.engine.executor import Task

BUCKET_BYTES = 64 * 2**20  # what one pair task holds of keys and signatures; more keys, more buckets
RUN_WINDOW = 4096  # a member of a larger run of equal band keys is compared with the 4,096 distinct before it


def bucket_count(keys: int, bytes_per_key: int) -> int:
    """Buckets for `keys` keys of `bytes_per_key` bytes each (with their signatures) under BUCKET_BYTES."""
    return max(1, -(-keys * bytes_per_key // BUCKET_BYTES))


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
    removed: Path | None = None  # lines: the clusters' decisions, if any (removed documents own no lines)


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
    """(keys [n, k] uint64, docs [n]) of this task's bucket, from every chunk, sorted by key then document."""
    names = {"near": (f"band{args.band}", "near_docs"), "exact": ("exact", "exact_docs"),
             "lines": ("lines", None)}[args.kind]
    keys, docs = [], []
    for chunk in range(args.chunks):
        found = load_npz(keys_path(args.work, chunk), *[n for n in names if n])
        key = found[0] if found[0].ndim == 2 else found[0][:, None]  # a band's keys: one column
        doc = found[1] if names[1] else key[:, 1].astype(np.int64)
        key = key[:, :1] if args.kind == "lines" else key
        mine = key[:, 0] % np.uint64(args.buckets) == np.uint64(args.bucket)
        keys.append(key[mine])
        docs.append(doc[mine])
    keys, docs = np.concatenate(keys), np.concatenate(docs)
    order = np.lexsort((docs, *keys.T[::-1]))
    return keys[order], docs[order]


def run_starts(keys: np.ndarray) -> np.ndarray:
    """Where each run of equal (sorted) keys starts, and its end: int64 [runs + 1]."""
    if not len(keys):
        return np.zeros(1, np.int64)
    changes = np.flatnonzero(np.any(keys[1:] != keys[:-1], axis=1)) + 1
    return np.concatenate(([0], changes, [len(keys)])).astype(np.int64)


def pairs_task(task: Task) -> dict[str, Any]:
    args: PairArgs = task.args
    keys, docs = _gather(args)
    if args.kind == "lines":
        return _line_task(args, keys, docs)
    bounds = run_starts(keys)
    if args.kind == "exact":
        first = np.repeat(docs[bounds[:-1]], np.diff(bounds))
        pairs = np.stack([first, docs], axis=1)[first != docs]
        save_npy(pairs_path(args.work, "exact", 0, args.bucket), pairs)
        return {"exact_pairs": int(len(pairs))}
    return _near_task(args, docs, bounds)


def _near_task(args: PairArgs, docs: np.ndarray, bounds: np.ndarray) -> dict[str, Any]:
    sizes = np.diff(bounds)
    members = np.unique(docs[np.repeat(sizes > 1, sizes)])
    signatures = _signatures(args, members)
    needed = agreements_needed(args.threshold, signatures.shape[1])
    # runs of two, the common case, verified at once; larger ones pair by pair
    two = bounds[:-1][sizes == 2]
    pair = np.stack([docs[two], docs[two + 1]], axis=1)
    rows = np.searchsorted(members, pair)
    ok = np.count_nonzero(signatures[rows[:, 0]] == signatures[rows[:, 1]], axis=1) >= needed
    edges, stats = [pair[ok]], {"near_candidates": int((sizes * (sizes - 1) // 2).sum()),
                                "near_pairs": int(ok.sum()), "near_windowed": 0}
    for r in np.flatnonzero(sizes > 2).tolist():
        run = docs[bounds[r]: bounds[r + 1]]
        found, verified, windowed = verify_run(run, signatures[np.searchsorted(members, run)], needed)
        edges.append(found)
        stats["near_pairs"] += verified
        stats["near_windowed"] += windowed
    save_npy(pairs_path(args.work, "near", args.band, args.bucket), np.concatenate(edges))
    return stats


def agreements_needed(threshold: float, permutations: int) -> int:
    """The permutations two signatures must agree on for an estimated Jaccard similarity >= threshold."""
    return math.ceil(threshold * permutations - 1e-9)  # 0.7 * 10 is 7.000000000000001 in floating point


def _signatures(args: PairArgs, docs: np.ndarray) -> np.ndarray:
    """uint32 [len(docs), permutations]: the signatures of `docs` (sorted), read chunk by chunk."""
    chunk_of = np.searchsorted(np.asarray(args.starts), docs, side="right") - 1
    out = None
    for chunk in np.unique(chunk_of).tolist():
        near_docs, signatures = load_npz(keys_path(args.work, chunk), "near_docs", "signatures")
        out = np.empty((len(docs), signatures.shape[1]), np.uint32) if out is None else out
        mine = chunk_of == chunk
        out[mine] = signatures[np.searchsorted(near_docs, docs[mine])]
    return out if out is not None else np.empty((0, 0), np.uint32)


def verify_run(docs: np.ndarray, signatures: np.ndarray, needed: int) -> tuple[np.ndarray, int, int]:
    """Verify every candidate pair of one run of equal band keys (`docs` ascending, their signature rows): a
    pair is similar when its signatures agree on at least `needed` permutations. Returns the pairs that join
    the run's clusters (int64 [m, 2], a spanning forest: the same clusters as every similar pair), the number
    of similar pairs, and 1 where the run held more than RUN_WINDOW + 1 distinct signatures (each then
    compared with the RUN_WINDOW before it only: time stays linear in the run). Identical signatures agree
    everywhere: they are joined uncompared, so a run of many exact copies costs nothing more."""
    distinct, first, inverse = np.unique(signatures, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first)  # distinct signatures in reading order of their first document
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    distinct, heads = distinct[order], docs[first[order]]
    copies = heads[rank[inverse]]
    edges = [np.stack([copies, docs], axis=1)[copies != docs]]
    counts = np.bincount(rank[inverse])
    verified = int((counts * (counts - 1) // 2).sum())
    parent = list(range(len(distinct)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(1, len(distinct)):
        low = max(0, i - RUN_WINDOW)
        agree = np.count_nonzero(distinct[low:i] == distinct[i], axis=1)
        for j in (np.flatnonzero(agree >= needed) + low).tolist():
            verified += int(counts[j] * counts[i])
            a, b = root(j), root(i)
            if a != b:
                parent[max(a, b)] = min(a, b)
                edges.append(np.array([[heads[j], heads[i]]], np.int64))
    return np.concatenate(edges).astype(np.int64), verified, int(len(distinct) > RUN_WINDOW + 1)


def _line_task(args: PairArgs, keys: np.ndarray, docs: np.ndarray) -> dict[str, Any]:
    """Lines repeated across the documents dedup keeps: (document, line key) to take out, in every document
    but the first that holds the line (a line repeated inside one document is left alone)."""
    gone = load_npz(args.removed, "removed")[0] if args.removed is not None else np.empty(0, np.int64)
    alive = ~np.isin(docs, gone)
    keys, docs = keys[alive], docs[alive]
    bounds = run_starts(keys)
    owner = np.repeat(docs[bounds[:-1]], np.diff(bounds))
    take = docs != owner
    taken = np.stack([docs[take].astype(np.uint64), keys[take, 0]], axis=1)
    save_npy(pairs_path(args.work, "lines", 0, args.bucket), taken)
    return {"repeated_lines": int(len(taken))}


def components(n: int, pairs: np.ndarray) -> np.ndarray:
    """int64 [n]: each document's cluster label, the least document number in its cluster (union-find as
    min-label propagation along every pair at once, with pointer jumping: a few numpy sweeps)."""
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
             for band in range(bands) for bucket in range(buckets)]
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
