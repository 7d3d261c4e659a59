"""Near-duplicate verification on constructed signatures: every candidate pair of a band is verified (not
only against the first of its run), similar pairs chain into one cluster, and the cluster keeps its first
document."""

from __future__ import annotations

import numpy as np
import pytest

from corpusprep.curate import dedup
from corpusprep.curate.analyse import keys_path
from corpusprep.curate.minhash import MinHasher
from corpusprep.engine import storage
from corpusprep.engine.executor import Task

PERMUTATIONS, BANDS, THRESHOLD = 16, 4, 0.7  # 4 bands of 4 rows; similar: agreeing on 12 of 16 values


def decide(tmp_path, signatures: np.ndarray, buckets: int = 1) -> dict[int, int]:
    """Write one chunk's keys as the analysis does, run every band's pair tasks and the clustering: the
    removed documents, each with the one kept in its place."""
    signatures = np.asarray(signatures, dtype=np.uint32)
    docs = np.arange(len(signatures), dtype=np.int64)
    bands = MinHasher(PERMUTATIONS, BANDS, seed=1).band_keys(signatures)
    with storage.atomic_open(keys_path(tmp_path, 0), "wb") as f:
        np.savez(f, near_docs=docs, signatures=signatures,
                 **{f"band{b}": np.ascontiguousarray(bands[:, b]) for b in range(BANDS)})
    for band in range(BANDS):
        for bucket in range(buckets):
            dedup.pairs_task(Task("t", dedup.PairArgs("near", band, bucket, buckets, tmp_path, 1, (0,),
                                                      THRESHOLD)))
    dedup.cluster(tmp_path, len(docs), BANDS, buckets, near=True, exact=False)
    removed, kept = dedup.load_npz(dedup.decisions_path(tmp_path), "removed", "kept")
    return dict(zip(removed.tolist(), kept.tolist(), strict=True))


def unrelated(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(10**6, 2**31, PERMUTATIONS)


def test_a_near_copy_whose_only_partner_is_not_first_in_its_bucket_is_found(tmp_path):
    """X, A, B share band 0's values; A and B agree on 13 of 16 values (one change in each other band, so
    band 0 is the only band they share), X on 4. The run [X, A, B]'s first is X: a check against the first
    only would clear both and miss B."""
    x, a = unrelated(1), unrelated(2)
    x[:4] = a[:4]
    b = a.copy()
    b[[4, 8, 12]] += 1
    assert (a == b).sum() == 13 and (x == a).sum() == (x == b).sum() == 4
    assert decide(tmp_path, [x, a, b, b, unrelated(3)]) == {2: 1, 3: 1}  # B and its exact copy: A's cluster


def test_a_chain_of_near_copies_is_one_cluster_keeping_its_first(tmp_path):
    """A~B share band 0, B~C share band 1, A and C agree on 10 of 16 (not similar) and share no band: still
    one cluster, through B, which keeps A, the first read."""
    a = unrelated(4)
    b = a.copy()
    b[[4, 8, 12]] += 1
    c = b.copy()
    c[[0, 9, 13]] += 1
    assert (a == b).sum() == (b == c).sum() == 13 and (a == c).sum() == 10
    assert decide(tmp_path, [unrelated(5), a, b, c]) == {2: 1, 3: 1}
    assert decide(tmp_path / "reversed", [c, b, a]) == {1: 0, 2: 0}  # whichever end comes first is kept


def test_verify_run_gives_the_clusters_of_every_similar_pair(monkeypatch):
    """On random runs (a few families of signatures with a few values changed, exact copies among them), the
    clusters of verify_run's pairs are those of all similar pairs compared by brute force; with a small
    window, a long run is flagged and still never joins dissimilar documents."""
    rng = np.random.default_rng(0)
    needed = dedup.agreements_needed(THRESHOLD, PERMUTATIONS)
    for trial in range(200):
        families = rng.integers(0, 2**31, (rng.integers(1, 4), PERMUTATIONS))
        n = int(rng.integers(2, 25))
        rows = families[rng.integers(0, len(families), n)].copy()
        for row in rows:
            row[rng.choice(PERMUTATIONS, int(rng.integers(0, 7)), replace=False)] = rng.integers(0, 2**31)
        docs = np.sort(rng.choice(10_000, n, replace=False)).astype(np.int64)
        edges, verified, windowed = dedup.verify_run(docs, rows.astype(np.uint32), needed)
        similar = [(i, j) for i in range(n) for j in range(i) if (rows[i] == rows[j]).sum() >= needed]
        truth = dedup.components(n, np.array(similar, np.int64).reshape(-1, 2))
        mine = dedup.components(n, np.searchsorted(docs, edges).reshape(-1, 2))
        assert np.array_equal(mine, truth), trial
        assert verified == len(similar) and windowed == 0
        assert len(edges) == n - len(np.unique(truth))  # a spanning forest: one pair per document joined
    monkeypatch.setattr(dedup, "RUN_WINDOW", 2)
    rows = np.array([unrelated(s) for s in range(6)], np.uint32)
    edges, verified, windowed = dedup.verify_run(np.arange(6, dtype=np.int64), rows, needed)
    assert windowed == 1 and verified == 0 and len(edges) == 0


@pytest.mark.parametrize("buckets", [1, 3])
def test_buckets_do_not_change_the_decisions(tmp_path, buckets):
    a = unrelated(7)
    b = a.copy()
    b[[1, 5, 9]] += 1
    assert decide(tmp_path, [unrelated(8), a, unrelated(9), b], buckets) == {3: 1}
