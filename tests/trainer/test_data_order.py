"""The global order of examples (issue 24, elastic resume): a function of the seed and the epoch alone, so
the examples a run sees, concatenated over ranks step by step, are the same sequence for any number of
ranks, DataLoader workers or batch size, and a run stopped anywhere and resumed from its `Position` on
another allocation continues at the exact example: none skipped or repeated, across epochs too.

Ranks are simulated in one process (one `ShardStream` per rank, `rank` / `world_size` set, as under
torchrun); DataLoader workers are real worker processes."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from torch.utils.data import DataLoader

from tests.trainer.test_data import row_keys
from trainer.config import DataConfig
from trainer.data import Position, ShardStream, loader_batches
from trainer.shards import open_shards

SEED, CHUNK_ROWS = 13, 100


def consume(shards, world: int, workers: int, batch_size: int, micro_batches: int, position: Position,
            grouped: bool = True) -> list[tuple]:
    """What a run of `world` ranks x `workers` DataLoader workers sees in `micro_batches` steps from
    `position`: each step, every rank's batch in rank order. Advances `position` as the trainer does (the
    examples of all ranks). `grouped`: through `loader_batches`, as the trainer reads (several workers
    make runs of micro-batches); else a plain DataLoader (one micro-batch a worker at a time)."""
    epoch_examples = shards.examples("train")
    data = DataConfig(batch_size=batch_size, chunk_rows=CHUNK_ROWS)
    streams = [ShardStream(shards, "train", data, SEED, rank, world, start=position) for rank in range(world)]
    if grouped:
        loaders = [loader_batches(stream, num_workers=workers, prefetch_factor=4 if workers else None)
                   for stream in streams]
        assert streams[0].group == (1 if workers < 2 else -(-CHUNK_ROWS // (batch_size * world)))
    else:
        loaders = [iter(DataLoader(stream, batch_size=None, num_workers=workers)) for stream in streams]
    seen = []
    for _ in range(micro_batches):
        for loader in loaders:
            batch = next(loader)
            assert len(batch["rows"]) == batch_size
            seen += row_keys(batch)
            position.advance(len(batch["rows"]), epoch_examples)
    return seen


@pytest.fixture(scope="module")
def shards(tiny_shards):
    return open_shards(tiny_shards)


@pytest.mark.slow  # ~8 s (2 cores under load): 12 allocations, up to 4 x 3 DataLoader worker processes
def test_every_allocation_sees_the_same_global_sequence(shards):
    """(a) World sizes 1, 2, 4 x DataLoader workers 0, 1, 2, 3, with the same global batch (24 examples:
    24, 12 or 6 a rank), from 100 examples before an epoch's end: one sequence, the 1 x 0 run's, across the
    epoch boundary; several workers making runs of 5 micro-batches (the trainer's way: each run covers a
    chunk of 100) or one at a time alike."""
    n = shards.examples("train")
    reference = consume(shards, 1, 0, 24, 10, Position(0, n - 100))
    assert len(reference) == 240
    for world, workers in itertools.product((1, 2, 4), (0, 1, 2, 3)):
        seen = consume(shards, world, workers, 24 // world, 10, Position(0, n - 100))
        assert seen == reference, (world, workers)
        if workers > 1:
            alone = consume(shards, world, workers, 24 // world, 10, Position(0, n - 100), grouped=False)
            assert alone == reference, (world, workers)


@pytest.mark.slow  # ~1.5 s idle (both cases)
@pytest.mark.parametrize("killed_after", [3, 8], ids=["epoch-boundary-after-resume", "before-resume"])
def test_two_ranks_two_workers_killed_resume_on_one_rank_three_workers(shards, killed_after):
    """(b) The issue's test: 2 ranks x 2 workers (batches of 16 a rank) consume some steps and stop; a run of
    1 rank x 3 workers (batches of 32: the same global batch) resumes from the saved position. What both
    saw, concatenated, is what an uninterrupted 2 x 2 run sees, in order and as a multiset; the epoch ends
    150 examples in, after the resume or before it."""
    n = shards.examples("train")
    straight = consume(shards, 2, 2, 16, 12, Position(0, n - 150))
    position = Position(0, n - 150)
    before = consume(shards, 2, 2, 16, killed_after, position)
    saved = Position(position.epoch, position.examples)  # what the checkpoint records
    assert saved.epoch == (killed_after * 32 >= 150)
    after = consume(shards, 1, 3, 32, 12 - killed_after, saved)
    assert before + after == straight
    assert Counter(before + after) == Counter(straight)
    assert len(straight) == 12 * 32


@pytest.mark.slow  # ~1.8 s idle (all cases)
@pytest.mark.parametrize("world, workers", [(1, 0), (1, 2), (2, 1)])
def test_a_resume_with_another_batch_size_continues_at_the_exact_example(shards, world, workers):
    """(c) 7 steps of 48 examples a rank, then steps of 80 (and another allocation: 1 rank x 3 workers):
    the position counts examples, not steps, so the resumed run starts at example 7 x 48 x world and the
    sequence is the uninterrupted one's."""
    n = shards.examples("train")
    position = Position()
    first = consume(shards, world, workers, 48, 7, position)
    assert (position.epoch, position.examples) == divmod(7 * 48 * world, n)
    then = consume(shards, 1, 3, 80, 9 * world, position)
    reference = consume(shards, 1, 0, 16, (7 * 48 + 9 * 80) * world // 16, Position())
    assert first + then == reference


def test_a_stream_starts_at_its_positions_example(shards):
    """A position is an offset in the endless order: epoch e, example x is the (e n + x)-th example."""
    n = shards.examples("train")
    stream = ShardStream(shards, "train", DataConfig(batch_size=8, chunk_rows=CHUNK_ROWS), SEED)
    order = [k for table in itertools.islice(stream.rows(n - 4), 2) for k in table_keys(table)]
    for epoch, example, expected in ((0, n - 4, order[:8]), (1, 0, order[4:12])):
        at = ShardStream(shards, "train", DataConfig(batch_size=8, chunk_rows=CHUNK_ROWS), SEED,
                         start=Position(epoch, example))
        assert row_keys(next(iter(at))) == expected


def table_keys(table) -> list[tuple]:
    return [(tuple(r["input_ids"]), tuple(r["masked_lm_positions"]), r["next_sentence_label"])
            for r in table.to_pylist()]
