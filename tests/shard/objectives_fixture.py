"""Pairs directories for the sop and none objectives, cut from the token stream of `realistic.py` in
`pairs_schema(dtype, objective)` and committed as build-pairs commits its output (stats.json names the
objective). They stand in for `build-pairs --objective sop|none` in the shard tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.engine.artifact import Artifact
from corpusprep.engine.files import write_json
from corpusprep.engine.outputs import OUTPUT_KINDS
from corpusprep.pair.schema import pairs_schema


def _lists(values: list[np.ndarray], kind: pa.DataType) -> pa.ListArray:
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int32)
    flat = np.concatenate(values) if values else np.zeros(0, np.int64)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, kind))


def make_sop_pairs(stream: np.ndarray, n: int, seed: int, max_seq_length: int = 128) -> pa.Table:
    """`n` pairs like ALBERT's: A and B consecutive in the stream (lengths as in `make_pairs`), swapped in
    exactly half of the rows (n // 2)."""
    rng = np.random.default_rng(seed)
    room = max_seq_length - 3
    total = np.where(rng.random(n) < 0.1, rng.integers(2, room + 1, n), room)
    len_a = rng.integers(1, total)
    len_b = total - len_a
    start_a = rng.integers(0, len(stream) - 2 * room, n)
    start_b = start_a + len_a
    swapped = rng.permutation(n) < n // 2
    first = [stream[s : s + k] for s, k in zip(np.where(swapped, start_b, start_a),
                                               np.where(swapped, len_b, len_a), strict=True)]
    second = [stream[s : s + k] for s, k in zip(np.where(swapped, start_a, start_b),
                                                np.where(swapped, len_a, len_b), strict=True)]
    doc = pa.array([f"doc:{i // 7}" for i in range(n)])
    index = np.arange(n) % 7
    return pa.Table.from_arrays(
        [
            _lists(first, pa.uint16()), _lists(second, pa.uint16()), pa.array(swapped), doc,
            pa.array(np.where(swapped, index + 1, index), pa.uint32()), doc,
            pa.array(np.where(swapped, index, index + 1), pa.uint32()),
        ],
        schema=pairs_schema(objective="sop"),
    )


def make_piece_rows(stream: np.ndarray, n: int, seed: int, max_seq_length: int = 128) -> pa.Table:
    """`n` rows of 1 to 5 pieces, each a stretch of the stream; 90% of the rows fill max_seq_length with
    their [CLS] and [SEP]s, the rest are shorter."""
    rng = np.random.default_rng(seed)
    tokens, lengths, docs, sentences = [], [], [], []
    for i in range(n):
        k = int(rng.integers(1, 6))
        room = max_seq_length - 2 * k
        total = room if rng.random() < 0.9 else int(rng.integers(k, room + 1))
        cuts = np.sort(rng.choice(np.arange(1, total), k - 1, replace=False)) if k > 1 else np.zeros(0, int)
        sizes = np.diff(np.concatenate([[0], cuts, [total]]))
        starts = rng.integers(0, len(stream) - max_seq_length, k)
        tokens.append(np.concatenate([stream[s : s + m] for s, m in zip(starts, sizes, strict=True)]))
        lengths.append(sizes)
        docs.append([f"doc:{i}:{j}" for j in range(k)])
        sentences.append(np.zeros(k, np.int64))
    return pa.Table.from_arrays(
        [
            _lists(tokens, pa.uint16()), _lists(lengths, pa.uint16()), pa.array(docs, pa.list_(pa.string())),
            _lists(sentences, pa.uint32()),
        ],
        schema=pairs_schema(objective="none"),
    )


MAKERS = {"sop": make_sop_pairs, "none": make_piece_rows}


def write_objective_pairs_dir(
    directory: Path, stream: np.ndarray, sizes: dict[str, list[int]], objective: str, seed: int = 0,
    stats_objective: str | None = None,
) -> Path:
    """A pairs directory of this objective as build-pairs writes it: {split}/part-PPPPP-d0.parquet,
    stats.json (with `objective`, `options.objective`, `splits.*.pairs`), the artifact committed.
    `stats_objective`: another objective for stats.json to claim (a broken directory)."""
    counts = {}
    for split, parts in sizes.items():
        for p, n in enumerate(parts):
            table = MAKERS[objective](stream, n, seed=seed * 1000 + p + (500 if split == "validation" else 0))
            (directory / split).mkdir(parents=True, exist_ok=True)
            pq.write_table(table, directory / split / f"part-{p:05d}-d0.parquet")
            counts[split] = counts.get(split, 0) + n
    claimed = stats_objective or objective
    stats = {
        "objective": claimed,
        "options": {"objective": claimed, "max_seq_length": 128},
        "splits": {split: {"pairs": n} for split, n in counts.items()},
    }
    write_json(directory / "stats.json", stats)
    owned = [p.relative_to(directory).as_posix() for p in sorted(directory.rglob("*")) if p.is_file()]
    with Artifact(directory, OUTPUT_KINDS["pairs"].adopting(), {"test_objective": objective, "seed": seed},
                  quiet=True) as artifact:
        artifact.commit(files=owned)
    return directory


OBJECTIVE_SIZES = {"train": [3000, 2000], "validation": [600]}


@pytest.fixture(scope="session")
def sop_pairs_dir(tmp_path_factory, stream) -> Path:
    return write_objective_pairs_dir(tmp_path_factory.mktemp("sop_pairs"), stream, OBJECTIVE_SIZES, "sop")


@pytest.fixture(scope="session")
def none_pairs_dir(tmp_path_factory, stream) -> Path:
    return write_objective_pairs_dir(tmp_path_factory.mktemp("none_pairs"), stream, OBJECTIVE_SIZES, "none")
