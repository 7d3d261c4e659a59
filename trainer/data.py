"""Training data from a shard directory: manifest checks, memory-mapped Parquet, a seeded and resumable
stream of padded batches split across data-parallel ranks and DataLoader workers.

Unit of work: a *chunk*, up to `chunk_rows` consecutive rows of one Parquet row group. Each epoch the row
groups are put in a seeded random order, their chunks listed in that order, and chunk j goes to consumer
j % (ranks x workers): no row is read twice or skipped within an epoch, and a consumer still decodes each
row group at most once. Rows are shuffled within a chunk; across chunks the shard stage already shuffled
globally. Only the current file is mapped and only the current row group decoded, so resident memory does
not grow with the number or size of shards (given row groups of bounded size).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch.utils.data import IterableDataset, get_worker_info

from corpusprep.engine import artifact
from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError, UsageError

COLUMNS = ["input_ids", "token_type_ids", "masked_lm_positions", "masked_lm_ids", "next_sentence_label"]
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclass(frozen=True)
class ShardFile:
    path: Path
    rows: int
    bytes: int
    sha256: str


@dataclass(frozen=True)
class VocabIds:
    size: int
    pad_id: int
    mask_id: int
    special_ids: tuple[int, ...]


@dataclass(frozen=True)
class Shards:
    directory: Path
    manifest: dict
    vocab: VocabIds

    def files(self, split: str) -> list[ShardFile]:
        splits = self.manifest.get("splits", {})
        if split not in splits:
            raise UsageError(f"{self.directory / 'manifest.json'}: no {split!r} split")
        return [
            ShardFile(self.directory / s["path"], int(s["rows"]), int(s["bytes"]), s.get("sha256", ""))
            for s in splits[split]["shards"]
        ]


def _vocab_ids(vocab: dict, where: Path) -> VocabIds:
    """Special ids from the manifest's vocab entry: {"size", "special_ids": {"[PAD]": 0, ...}}."""
    special = vocab.get("special_ids") or vocab.get("special") or {}
    try:
        ids = {t: int(special[t]) for t in SPECIAL_TOKENS}
        return VocabIds(int(vocab["size"]), ids["[PAD]"], ids["[MASK]"], tuple(sorted(ids.values())))
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{where}: vocab entry lacks size or special id {e}") from None


def open_shards(directory: str | Path, splits: tuple[str, ...] = ("train",), verify: bool = False) -> Shards:
    """Read the manifest and check the files of `splits`: sizes always, sha256 with verify=True."""
    directory = Path(directory)
    manifest_path = directory / "manifest.json"
    if not manifest_path.is_file():
        raise UsageError(f"{manifest_path}: no manifest (not a finished `corpusprep shard` output)")
    artifact.require(directory, "shards")  # every owned file there with its size (sha256 below, with verify)
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise DataError(f"{manifest_path}: unreadable manifest ({e})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("splits", {}), dict):
        raise DataError(f"{manifest_path}: not a shards manifest (valid JSON of another shape)")
    shards = Shards(directory, manifest, _vocab_ids(manifest.get("vocab", {}), manifest_path))
    for split in splits:
        if split != "train" and split not in manifest.get("splits", {}):
            continue  # validation is optional
        for f in shards.files(split):
            if not f.path.is_file():
                raise DataError(f"{f.path}: listed in the manifest but missing")
            size = f.path.stat().st_size
            if size != f.bytes:
                raise DataError(f"{f.path}: {size} bytes, manifest says {f.bytes}")
            if verify and (digest := sha256_file(f.path)) != f.sha256:
                raise DataError(f"{f.path}: sha256 {digest[:12]}... but the manifest says {f.sha256[:12]}...")
        if verify:  # a shard the manifest does not list: copied in by hand, or left by another run
            listed = {f.path.resolve() for f in shards.files(split)}
            for path in sorted((directory / split).glob("*.parquet")):
                if path.resolve() not in listed:
                    raise DataError(f"{path}: not in the manifest")
    return shards


def sha256_file(path: Path, block: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while data := f.read(block):
            h.update(data)
    return h.hexdigest()


# ---------------------------------------------------------------- chunks and their order


@dataclass(frozen=True)
class Chunk:
    id: int  # position in the natural order: a stable key for seeding
    file: int
    row_group: int
    start: int  # rows [start, stop) of the row group
    stop: int

    @property
    def rows(self) -> int:
        return self.stop - self.start


def plan_chunks(files: list[ShardFile], chunk_rows: int) -> list[Chunk]:
    """All chunks in file / row-group order (reads only the Parquet footers)."""
    chunks: list[Chunk] = []
    for i, f in enumerate(files):
        meta = pq.read_metadata(f.path)
        if meta.num_rows != f.rows:
            raise DataError(f"{f.path}: {meta.num_rows} rows, manifest says {f.rows}")
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            for start in range(0, n, chunk_rows):
                chunks.append(Chunk(len(chunks), i, g, start, min(start + chunk_rows, n)))
    return chunks


def epoch_order(chunks: list[Chunk], seed: int, epoch: int, shuffle: bool) -> list[Chunk]:
    """Chunks in this epoch's order: row groups shuffled, chunks of one group kept together."""
    if not shuffle:
        return chunks
    groups: dict[tuple[int, int], list[Chunk]] = {}
    for c in chunks:
        groups.setdefault((c.file, c.row_group), []).append(c)
    keys = list(groups)
    order = rng_for(seed, "trainer-order", epoch).permutation(len(keys))
    return [c for k in order for c in groups[keys[k]]]


# ---------------------------------------------------------------- masking and batching


def _flat(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(values, offsets from 0) of a list column."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = arr.offsets.to_numpy()
    return arr.flatten().to_numpy(), (offsets - offsets[0]).astype(np.int64)


def remask(table: pa.Table, vocab: VocabIds, rng: np.random.Generator, fraction: float = 0.15) -> pa.Table:
    """Mask again from the original tokens: round(fraction x maskable) positions per row (at least 1),
    of which 80% become [MASK], 10% a random non-special token, 10% stay (BERT's rules)."""
    ids, offsets = _flat(table["input_ids"])
    positions, pos_offsets = _flat(table["masked_lm_positions"])
    labels, _ = _flat(table["masked_lm_ids"])
    n_rows = len(offsets) - 1
    row_of = np.repeat(np.arange(n_rows), np.diff(offsets))
    original = ids.astype(np.int64)
    original[offsets[np.repeat(np.arange(n_rows), np.diff(pos_offsets))] + positions] = labels

    maskable = ~np.isin(original, vocab.special_ids)
    per_row = np.bincount(row_of[maskable], minlength=n_rows)
    n_mask = np.minimum(np.maximum(1, np.rint(fraction * per_row).astype(np.int64)), per_row)
    key = np.where(maskable, rng.random(len(original)), 2.0)  # non-maskable sort last in their row
    order = np.lexsort((key, row_of))  # by row, then random key
    rank = np.arange(len(order)) - offsets[row_of[order]]
    chosen = np.sort(order[rank < n_mask[row_of[order]]])

    new = original.copy()
    draw = rng.random(len(chosen))
    new[chosen[draw < 0.8]] = vocab.mask_id
    replace = chosen[(draw >= 0.8) & (draw < 0.9)]
    randoms = np.setdiff1d(np.arange(vocab.size), vocab.special_ids)
    new[replace] = rng.choice(randoms, size=len(replace))

    chosen_rows = row_of[chosen]
    new_pos_offsets = np.concatenate([[0], np.cumsum(np.bincount(chosen_rows, minlength=n_rows))])
    columns = {
        "input_ids": (new, offsets),
        "masked_lm_positions": (chosen - offsets[chosen_rows], new_pos_offsets),
        "masked_lm_ids": (original[chosen], new_pos_offsets),
    }
    for name, (values, offs) in columns.items():
        i = table.schema.get_field_index(name)
        field = table.schema.field(i)  # keep the shard's exact types, nullability included
        column = pa.ListArray.from_arrays(pa.array(offs, pa.int32()), pa.array(values, field.type.value_type))
        table = table.set_column(i, field, column.cast(field.type))
    return table


def collate(table: pa.Table, pad_id: int, multiple: int = 8) -> dict[str, torch.Tensor]:
    """Rows -> padded tensors: [B, L] with L = longest row rounded up to `multiple`; masked positions
    as flat indices b * L + i into that grid, so the model gathers them without a [B, L, V] tensor."""
    ids, offsets = _flat(table["input_ids"])
    types, _ = _flat(table["token_type_ids"])
    positions, pos_offsets = _flat(table["masked_lm_positions"])
    labels, _ = _flat(table["masked_lm_ids"])
    lengths = np.diff(offsets)
    B = len(lengths)
    L = -(-int(lengths.max()) // multiple) * multiple
    row = np.repeat(np.arange(B), lengths)
    col = np.arange(len(ids)) - offsets[row]
    input_ids = np.full((B, L), pad_id, dtype=np.int64)
    input_ids[row, col] = ids
    token_type_ids = np.zeros((B, L), dtype=np.int64)
    token_type_ids[row, col] = types
    attention_mask = np.zeros((B, L), dtype=np.bool_)
    attention_mask[row, col] = True
    mlm_rows = np.repeat(np.arange(B), np.diff(pos_offsets))
    return {
        "input_ids": torch.from_numpy(input_ids),
        "token_type_ids": torch.from_numpy(token_type_ids),
        "attention_mask": torch.from_numpy(attention_mask),
        "mlm_positions": torch.from_numpy(mlm_rows * L + positions.astype(np.int64)),
        "mlm_labels": torch.from_numpy(labels.astype(np.int64)),
        "nsp_labels": torch.from_numpy(table["next_sentence_label"].to_numpy().astype(np.int64)),
    }


# ---------------------------------------------------------------- the stream


class ShardStream(IterableDataset):
    """Batches for one data-parallel rank; DataLoader workers (batch_size=None) split the rank's share.

    train (loop=True, shuffle=True): endless, epoch after epoch; the partial batch at an epoch's end is
    completed from the next epoch, so nothing is dropped. `start_batch` resumes after that many batches of
    this rank (the DataLoader hands out worker batches round-robin, so each worker can skip its own share).
    eval (loop=False, shuffle=False): one pass in file order, last batch partial.
    """

    def __init__(
        self,
        shards: Shards,
        split: str,
        batch_size: int,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        chunk_rows: int = 1024,
        pad_multiple: int = 8,
        dynamic_masking: bool = False,
        shuffle: bool = True,
        loop: bool = True,
        start_batch: int = 0,
    ):
        super().__init__()
        self.shards, self.split, self.batch_size, self.seed = shards, split, batch_size, seed
        self.rank, self.world_size = rank, world_size
        self.files = shards.files(split)
        self.chunks = plan_chunks(self.files, chunk_rows)
        self.pad_multiple, self.dynamic_masking = pad_multiple, dynamic_masking
        self.shuffle, self.loop, self.start_batch = shuffle, loop, start_batch

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        # The DataLoader takes batch i from worker i % workers, starting at worker 0. Resuming at batch
        # `start_batch`, worker 0 must play the stream that owned that batch: rotate the roles.
        role = (worker + self.start_batch) % workers
        consumer, consumers = self.rank * workers + role, self.world_size * workers
        if self.loop and len(self.chunks) < consumers:
            raise UsageError(
                f"{self.shards.directory}: {len(self.chunks)} chunks of {self.split} data for {consumers} "
                "ranks x workers; lower data.chunk_rows or the worker count"
            )
        done = max(0, (self.start_batch - role + workers - 1) // workers)  # batches this role already gave
        pieces = self.rows(consumer, consumers, skip=done * self.batch_size)
        pending: list[pa.Table] = []
        have = 0
        for piece in pieces:
            while len(piece):
                take = min(len(piece), self.batch_size - have)
                pending.append(piece.slice(0, take))
                piece, have = piece.slice(take), have + take
                if have == self.batch_size:
                    yield self.make_batch(pending)
                    pending, have = [], 0
        if pending:
            yield self.make_batch(pending)

    def make_batch(self, pieces: list[pa.Table]) -> dict[str, torch.Tensor]:
        table = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
        return collate(table, self.shards.vocab.pad_id, self.pad_multiple)

    def rows(self, consumer: int, consumers: int, skip: int = 0) -> Iterator[pa.Table]:
        """This consumer's rows as small tables, epoch after epoch, starting `skip` rows in."""
        epoch = 0
        reader = _RowGroupReader(self.files)
        while True:
            mine = epoch_order(self.chunks, self.seed, epoch, self.shuffle)[consumer::consumers]
            for chunk in mine:
                if skip >= chunk.rows:  # fast-forward without reading
                    skip -= chunk.rows
                    continue
                table = reader.read(chunk.file, chunk.row_group).slice(chunk.start, chunk.rows)
                if self.dynamic_masking:
                    rng = rng_for(self.seed, "trainer-mask", epoch, chunk.id)
                    table = remask(table, self.shards.vocab, rng)
                if self.shuffle:
                    rng = rng_for(self.seed, "trainer-rows", epoch, chunk.id)
                    table = table.take(rng.permutation(chunk.rows))
                yield table.slice(skip)
                skip = 0
            epoch += 1
            if not self.loop:
                return


class _RowGroupReader:
    """Keeps one file memory-mapped and one row group decoded; switching file unmaps the previous one."""

    def __init__(self, files: list[ShardFile]):
        self.files = files
        self.file: int | None = None
        self.parquet: pq.ParquetFile | None = None
        self.key: tuple[int, int] | None = None
        self.table: pa.Table | None = None

    def read(self, file: int, row_group: int) -> pa.Table:
        if self.key != (file, row_group):
            if self.file != file:
                if self.parquet is not None:
                    self.parquet.close()
                self.table = None  # drop references into the old mapping before opening the next
                self.parquet = pq.ParquetFile(pa.memory_map(str(self.files[file].path)))
                self.file = file
            try:
                self.table = self.parquet.read_row_group(row_group, columns=COLUMNS)
            except (OSError, pa.ArrowException) as e:
                raise DataError(f"{self.files[file].path}: row group {row_group}: {e}") from None
            self.key = (file, row_group)
        return self.table
