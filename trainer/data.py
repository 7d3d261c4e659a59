"""Training data from an opened shard directory (trainer.shards): memory-mapped Parquet read as a seeded
and resumable stream of unpadded batches (trainer.batch), split across data-parallel ranks and DataLoader
workers.

The global order of examples is a function of the seed and the epoch alone. Unit of work: a *chunk*, up to
`chunk_rows` consecutive rows of one Parquet row group. Each epoch the row groups are put in a seeded random
order (chunks of one group kept together) and the rows of each chunk in a seeded random order; the epochs
follow one another without a seam. Global micro-batch k is the next `batch_size x ranks` examples of that
order; each rank takes its slice, and the rank's DataLoader workers make its micro-batches in turn. So the
sequence of examples is the same for any number of ranks or workers, and a resume continues at the exact
example (`Position`: epoch and examples consumed) whatever the ranks, workers or batch size it resumes with.
No example is read twice or skipped within an epoch. Across chunks the shard stage already shuffled
globally. Only the current file is mapped and only the current row group decoded, so resident memory does
not grow with the number or size of shards (given row groups of bounded size); a consumer reads only the
chunks its slices fall in.

Dynamic masking masks each chunk again from its original tokens with `corpusprep.shard.table.remask_table`
(`corpusprep.mask.mask_examples`, the function `corpusprep shard` masks with) and the options the shards'
manifest records (rate, cap, strategy, word segmenter), drawn from (seed, epoch, chunk): one masking rule,
whichever stage applies it, and the same masks whichever consumer reads the chunk.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from corpusprep.engine import storage
from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError, UsageError
from corpusprep.mask import MaskVocab
from corpusprep.objectives.base import Objective
from corpusprep.shard.table import remask_table
from trainer.batch import check_rows, collate
from trainer.config import DataConfig
from trainer.shards import ShardFile, Shards

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
        with storage.parquet_file(f.path) as parquet:  # the footer alone
            meta = parquet.metadata
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


# ---------------------------------------------------------------- the stream


@dataclass
class Position:
    """Where training stands in the global order of examples: the epoch, and how many of its examples
    all ranks together have consumed. The order is a function of the seed and the epoch alone, so a
    position names the same next example whatever the ranks, DataLoader workers or batch size that
    continue from it."""

    epoch: int = 0
    examples: int = 0  # consumed within `epoch`: 0 <= examples < the epoch's examples

    def advance(self, examples: int, epoch_examples: int) -> None:
        more, self.examples = divmod(self.examples + examples, epoch_examples)
        self.epoch += more

    def offset(self, epoch_examples: int) -> int:
        """The position as an offset in the endless sequence of epochs."""
        return self.epoch * epoch_examples + self.examples


class ShardStream(IterableDataset):
    """Batches for one data-parallel rank; DataLoader workers (batch_size=None) take turns.

    The global order: each epoch the chunks in `epoch_order(seed, epoch)`, the rows of each chunk
    permuted by (seed, epoch, chunk), epoch after epoch without a seam. Global micro-batch k is the next
    `batch_size x world_size` examples of it from `start`; rank r takes its r-th slice of `batch_size`, and
    DataLoader worker w of W makes the rank's micro-batches k = w, w + W, ... (the DataLoader hands them out
    round-robin from worker 0). Concatenated over ranks in rank order, the batches are the global order
    itself, whatever the ranks, workers or batch size: a resume from a `Position` continues at its example.

    train (loop=True, shuffle=True): endless; every batch holds exactly `batch_size` rows (an epoch's
    last examples share a batch with the next epoch's first), so no example is dropped or repeated.
    eval (loop=False, shuffle=False): one pass in file order; the last batches short or absent.
    """

    def __init__(
        self,
        shards: Shards,
        split: str,
        data: DataConfig,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        *,
        shuffle: bool = True,
        loop: bool = True,
        start: Position | None = None,
        mask_vocab: MaskVocab | None = None,
        mask_key: tuple = ("trainer-mask",),
    ):
        """`data`: the batch size, chunk rows, padding and dynamic masking (the config's `data` table)."""
        super().__init__()
        self.shards, self.split, self.batch_size, self.seed = shards, split, data.batch_size, seed
        self.rank, self.world_size = rank, world_size
        self.files = shards.files(split)
        self.chunks = plan_chunks(self.files, data.chunk_rows)
        self.epoch_examples = sum(chunk.rows for chunk in self.chunks)
        if loop and not self.epoch_examples:
            raise UsageError(f"{shards.directory}: no {split} rows to train on")
        self.start = start.offset(self.epoch_examples) if start else 0  # an offset in the endless order
        self.pad_multiple = data.pad_multiple
        self.shuffle, self.loop = shuffle, loop
        # masked afresh (with these tables, and rng_for(seed, *mask_key, epoch, chunk)) when dynamic or
        # given one: the trainer's evaluation masks the validation rows k times, by (seed, "eval", k)
        self.mask_vocab, self.masking, self.mask_key = mask_vocab, shards.masking(), mask_key
        if data.dynamic_masking and mask_vocab is None:  # built once here, pickled to the workers
            self.mask_vocab = MaskVocab.from_vocab(shards.vocab_info(), shards.word_segmenter())
        self.group = 1  # micro-batches a DataLoader worker makes at a time (`batches` sets it)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor] | list[dict[str, torch.Tensor]]]:
        info = get_worker_info()
        return self.worker_batches(*((info.id, info.num_workers) if info else (0, 1)))

    def worker_batches(self, worker: int, workers: int) -> Iterator[dict | list[dict]]:
        """What DataLoader worker `worker` of `workers` makes: the rank's micro-batches k = worker, worker +
        workers, ...; with `group` > 1 items of `group` consecutive ones (`loader_batches` flattens them)."""
        reader = OrderReader(self)
        end = None if self.loop else self.epoch_examples
        global_batch = self.batch_size * self.world_size
        for item in itertools.count(worker, workers):
            made = []
            for k in range(item * self.group, (item + 1) * self.group):
                first = self.start + k * global_batch + self.rank * self.batch_size
                last = first + self.batch_size if end is None else min(first + self.batch_size, end)
                if first >= last:
                    break
                made.append(self.make_batch(list(reader.read(first, last))))
            if made:
                yield made if self.group > 1 else made[0]
            if len(made) < self.group:
                return

    def grouped(self, workers: int) -> int:
        """How many consecutive micro-batches each of `workers` DataLoader workers should make at a time, so
        that its run of the order covers a whole chunk (a row group decoded by one worker, not by each):
        1 for at most one worker, or when one global batch already covers a chunk."""
        largest = max((chunk.rows for chunk in self.chunks), default=1)
        return 1 if workers <= 1 else -(-largest // (self.batch_size * self.world_size))

    def make_batch(self, pieces: list[pa.Table]) -> dict[str, torch.Tensor]:
        table = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
        return collate(table, self.shards.vocab.pad_id, self.pad_multiple, self.shards.objective)

    def rows(self, first: int = 0, last: int | None = None) -> Iterator[pa.Table]:
        """Examples [first, last) of the global order (offsets from epoch 0's first example; `last` None:
        to the end, endless with loop=True) as small tables, one per chunk."""
        if not self.loop:
            last = self.epoch_examples if last is None else min(last, self.epoch_examples)
        return OrderReader(self).read(first, last)


def loader_batches(stream: ShardStream, **loader: Any) -> Iterator[dict[str, torch.Tensor]]:
    """The stream's micro-batches in order through a DataLoader (`loader`: its settings, num_workers among
    them), its workers started now. With several workers each makes a run of consecutive micro-batches at a
    time (`grouped`), handed out whole and flattened here: the same order, fewer row groups decoded."""
    stream.group = stream.grouped(loader.get("num_workers", 0))
    if stream.group > 1:  # an item holds `group` micro-batches: fewer items in flight hold as many
        loader["prefetch_factor"] = max(1, -(-loader.get("prefetch_factor", 2) // stream.group))
    items = iter(DataLoader(stream, batch_size=None, **loader))
    return items if stream.group == 1 else (batch for item in items for batch in item)


class OrderReader:
    """One consumer's reader of a stream's global order: example offsets -> tables. It keeps one row group
    decoded (`_RowGroupReader`), the current chunk's rows (masked afresh when dynamic) and their order, and
    the current epoch's chunk order, so consecutive slices of a chunk cost one read, one masking."""

    def __init__(self, stream: ShardStream):
        self.stream = stream
        self.row_groups = _RowGroupReader(stream.files, stream.shards.objective, stream.shards.columns)
        self.epoch: int | None = None
        self.order: list[Chunk] = []
        self.starts = np.zeros(1, dtype=np.int64)  # where each chunk of the epoch's order starts
        self.chunk: tuple[int, int] | None = None  # (epoch, chunk id) of `table` and `permutation`
        self.table: pa.Table | None = None
        self.permutation: np.ndarray | None = None

    def read(self, first: int, last: int | None = None) -> Iterator[pa.Table]:
        """Examples [first, last) (last None: endless) in order, one table per chunk they touch."""
        stream = self.stream
        while last is None or first < last:
            epoch, offset = divmod(first, stream.epoch_examples)
            if epoch != self.epoch:
                self.order = epoch_order(stream.chunks, stream.seed, epoch, stream.shuffle)
                self.starts = np.cumsum([0] + [chunk.rows for chunk in self.order])
                self.epoch = epoch
            i = int(np.searchsorted(self.starts, offset, side="right")) - 1
            begin = offset - int(self.starts[i])
            count = self.order[i].rows - begin
            count = count if last is None else min(count, last - first)
            switching = self.order[i].file != self.row_groups.file
            rows = self.chunk_rows(epoch, self.order[i], begin, count)
            if switching and stream.shards.cache is not None:  # a shard from a store: fetch the next ones now
                stream.shards.cache.prefetch([self.row_groups.source(f) for f in self.upcoming_files(i)])
            yield rows
            first += count

    def upcoming_files(self, i: int) -> list[int]:
        """The files the chunks after the i-th of this epoch's order read next, each once, in order (as many
        as the shard cache fetches ahead)."""
        ahead, seen, found = self.stream.shards.cache.ahead, {self.order[i].file}, []
        for chunk in itertools.islice(self.order, i + 1, None):
            if len(found) >= ahead:
                break
            if chunk.file not in seen:
                seen.add(chunk.file)
                found.append(chunk.file)
        return found

    def chunk_rows(self, epoch: int, chunk: Chunk, begin: int, count: int) -> pa.Table:
        """Rows [begin, begin + count) of `chunk` in its order for `epoch`."""
        s = self.stream
        if self.chunk != (epoch, chunk.id):
            table = self.row_groups.read(chunk.file, chunk.row_group).slice(chunk.start, chunk.rows)
            if s.mask_vocab is not None:
                rng = rng_for(s.seed, *s.mask_key, epoch, chunk.id)
                table = remask_table(table, s.mask_vocab, rng, **s.masking)
            self.table, self.chunk = table, (epoch, chunk.id)
            self.permutation = None
            if s.shuffle:
                self.permutation = rng_for(s.seed, "trainer-rows", epoch, chunk.id).permutation(chunk.rows)
        if self.permutation is None:
            return self.table.slice(begin, count)
        return self.table.take(self.permutation[begin : begin + count])


class _RowGroupReader:
    """Keeps one file memory-mapped and one row group decoded; switching file unmaps the previous one."""

    def __init__(self, files: list[ShardFile], spec: Objective, columns: list[str]):
        self.files, self.spec, self.columns = files, spec, columns
        self.file: int | None = None
        self.parquet: pq.ParquetFile | None = None
        self.key: tuple[int, int] | None = None
        self.table: pa.Table | None = None

    def source(self, file: int) -> tuple[Path, str, int]:
        """(path, sha256, bytes) of a file, what the shard cache fetches."""
        f = self.files[file]
        return f.path, f.sha256, f.bytes

    @staticmethod
    def _map(f: ShardFile) -> pq.ParquetFile:
        try:
            return storage.parquet_file(f.open_local(), memory_map=True)
        except FileNotFoundError:
            if f.cache is None:
                raise
            # the cached copy evicted by another DataLoader worker between its fetch and its mapping
            return storage.parquet_file(f.open_local(), memory_map=True)

    def read(self, file: int, row_group: int) -> pa.Table:
        if self.key != (file, row_group):
            if self.file != file:
                if self.parquet is not None:
                    self.parquet.close()
                    self.files[self.file].close_local()
                self.table, self.parquet = None, None  # drop references into the old mapping first
                self.files[file].check_unchanged()
                self.parquet = self._map(self.files[file])
                self.files[file].check_unchanged()  # not replaced between the check and the mapping
                self.file = file
            where = f"{storage.url(self.files[file].path)}: row group {row_group}"
            try:
                self.table = self.parquet.read_row_group(row_group, columns=self.columns)
            except (OSError, pa.ArrowException) as e:
                raise DataError(f"{where}: {e}") from None
            if missing := [c for c in self.columns if c not in self.table.column_names]:
                objective = f"{self.spec.name} shards, as the manifest says"
                raise DataError(f"{where}: no column {', '.join(missing)} ({objective})")
            check_rows(self.table, self.spec, where)
            self.key = (file, row_group)
        return self.table
