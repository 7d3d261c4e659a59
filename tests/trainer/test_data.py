from __future__ import annotations

import itertools
import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from torch.utils.data import DataLoader

from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError, UsageError
from corpusprep.mask import MaskVocab, num_predictions
from corpusprep.shard.table import remask_table
from tests.contexts import quiet
from trainer.config import DataConfig
from trainer.data import Position, ShardStream
from trainer.shards import open_shards


def row_keys(batch: dict) -> list[tuple]:
    """One hashable key per row: its real tokens, masked positions and NSP label."""
    rows = batch["rows"]
    R, L = rows.shape
    at = batch["slots"][batch["mlm_positions"]]  # r * L + i of each prediction
    keys = []
    for r in range(R):
        ids = batch["input_ids"][rows[r][rows[r] < batch["num_tokens"]]].tolist()
        positions = (at[at // L == r] % L).tolist()
        keys.append((tuple(ids), tuple(positions), int(batch["sentence_labels"][r])))
    return keys


def all_rows(shards_dir: Path, split: str = "train") -> Counter:
    keys = Counter()
    for path in sorted((shards_dir / split).glob("*.parquet")):
        for r in pq.read_table(path).to_pylist():
            keys[(tuple(r["input_ids"]), tuple(r["masked_lm_positions"]), r["next_sentence_label"])] += 1
    return keys


@pytest.mark.slow  # ~4.2 s idle
def test_ranks_and_workers_cover_every_row_exactly_once(tiny_shards):
    shards = open_shards(tiny_shards)
    seen = Counter()
    per_rank = []
    for rank in range(2):
        stream = ShardStream(shards, "train", DataConfig(batch_size=50, chunk_rows=100), seed=3, rank=rank,
                             world_size=2, loop=False)
        keys = [k for batch in DataLoader(stream, batch_size=None, num_workers=2) for k in row_keys(batch)]
        per_rank.append(len(keys))
        seen.update(keys)
    expected = all_rows(tiny_shards)
    assert seen == expected
    # the split is balanced to within a batch: rank r takes the r-th 50 of every 100 examples
    assert abs(per_rank[0] - per_rank[1]) <= 50


def test_order_is_seeded_and_changes_every_epoch(tiny_shards):
    shards = open_shards(tiny_shards)
    n = sum(f.rows for f in shards.files("train"))

    def first_rows(seed: int, skip_epochs: int = 0) -> list[tuple]:
        stream = ShardStream(shards, "train", DataConfig(batch_size=64, chunk_rows=100), seed=seed,
                             start=Position(skip_epochs, 0))
        return row_keys(next(iter(stream)))

    assert first_rows(1) == first_rows(1)
    assert first_rows(1) != first_rows(2)
    assert first_rows(1) != first_rows(1, skip_epochs=1)  # one epoch later: another order
    assert n > 64


@pytest.mark.slow  # ~1.1 s idle
def test_an_epoch_in_the_endless_stream_is_a_permutation(tiny_shards):
    """Training mode: the first n rows of one consumer's stream are exactly the split, then it goes on."""
    shards = open_shards(tiny_shards)
    n = sum(f.rows for f in shards.files("train"))
    stream = ShardStream(shards, "train", DataConfig(batch_size=100, chunk_rows=64), seed=5)
    rows = [k for batch in itertools.islice(iter(stream), n // 100 + 2) for k in row_keys(batch)]
    assert Counter(rows[:n]) == all_rows(tiny_shards)
    assert len(rows) > n  # the partial last batch was completed from the next epoch


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_position_gives_the_same_batches(tiny_shards, workers):
    shards = open_shards(tiny_shards)
    n = shards.examples("train")

    def batches(start: int, count: int) -> list[list[tuple]]:
        position = Position()
        position.advance(start * 48, n)  # as the trainer counts: examples, epochs carried
        stream = ShardStream(shards, "train", DataConfig(batch_size=48, chunk_rows=128), seed=7,
                             start=position)
        loader = DataLoader(stream, batch_size=None, num_workers=workers)
        return [row_keys(b) for b in itertools.islice(loader, count)]

    uninterrupted = batches(0, 9)
    assert batches(5, 4) == uninterrupted[5:]
    assert batches(250, 1) != uninterrupted[:1]  # a later epoch, another order


def test_dynamic_masking_follows_bert_rules(tiny_shards):
    shards = open_shards(tiny_shards)
    table = pq.read_table(tiny_shards / "train" / "shard-00000.parquet")
    vocab = shards.vocab
    masking = shards.masking()
    mask_vocab = MaskVocab.from_vocab(shards.vocab_info())

    def originals(t) -> list[list[int]]:
        out = []
        for r in t.to_pylist():
            ids = list(r["input_ids"])
            for p, label in zip(r["masked_lm_positions"], r["masked_lm_ids"], strict=True):
                ids[p] = label
            out.append(ids)
        return out

    new = remask_table(table, mask_vocab, rng_for(0, "test", 1), **masking)
    assert originals(new) == originals(table)  # re-masking starts from the same original tokens
    assert new.schema == table.schema
    assert new["input_ids"] != table["input_ids"]
    again = remask_table(table, mask_vocab, rng_for(0, "test", 1), **masking)
    assert again.equals(new)  # seeded

    rows = new.to_pylist()
    masked = sum(len(r["masked_lm_positions"]) for r in rows)
    # the shard stage's budget per row, min(cap, max(1, round(n_tokens x 0.15))): token masking fills it
    lengths = np.array([len(r["input_ids"]) for r in rows])
    assert masked == int(num_predictions(lengths, 0.15, 20).sum())
    kinds = Counter()
    for r in rows:
        assert r["masked_lm_positions"] == sorted(set(r["masked_lm_positions"]))
        for p, label in zip(r["masked_lm_positions"], r["masked_lm_ids"], strict=True):
            assert label not in vocab.special_ids
            token = r["input_ids"][p]
            kinds["mask" if token == vocab.mask_id else "kept" if token == label else "random"] += 1
    # ~2,000 predictions: 3 sigma of a binomial share is <= 0.03
    assert kinds["mask"] / masked == pytest.approx(0.8, abs=0.03)
    assert kinds["random"] / masked == pytest.approx(0.1, abs=0.025)
    assert kinds["kept"] / masked == pytest.approx(0.1, abs=0.025)


def test_dynamic_masking_differs_per_epoch(tiny_shards):
    shards = open_shards(tiny_shards)
    n = sum(f.rows for f in shards.files("train"))
    stream = ShardStream(shards, "train", DataConfig(batch_size=64, dynamic_masking=True, chunk_rows=200),
                         seed=0, shuffle=False)
    epoch0 = next(stream.rows(0))
    epoch1 = next(stream.rows(n))  # the same first chunk, one epoch later
    assert epoch0["masked_lm_positions"] != epoch1["masked_lm_positions"]
    mask_vocab = MaskVocab.from_vocab(shards.vocab_info())
    unmasked = [remask_table(t, mask_vocab, rng_for(0, "x"), **shards.masking()) for t in (epoch0, epoch1)]
    assert unmasked[0].equals(unmasked[1])  # same rows: re-masking them alike gives equal tables


def copy_shards(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_verify_catches_flipped_bytes(tiny_shards, tmp_path):
    shards_dir = copy_shards(tiny_shards, tmp_path / "s")
    victim = shards_dir / "train" / "shard-00002.parquet"
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    open_shards(shards_dir)  # same size: only the checksum can tell
    with pytest.raises(DataError, match=r"shard-00002\.parquet: sha256"):
        open_shards(shards_dir, verify=True)


def test_size_mismatch_and_missing_manifest(tiny_shards, tmp_path):
    shards_dir = copy_shards(tiny_shards, tmp_path / "s")
    with open(shards_dir / "validation" / "shard-00001.parquet", "ab") as f:
        f.write(b"x")
    with pytest.raises(DataError, match=r"validation/shard-00001\.parquet: \d+ bytes, manifest says"):
        open_shards(shards_dir, ("train", "validation"))
    (shards_dir / "manifest.json").unlink()
    with pytest.raises(UsageError, match="no manifest"):
        open_shards(shards_dir)


def test_more_ranks_than_chunks_share_them(tiny_shards):
    """Consumers take slices of the global order, not chunks: 64 ranks over fewer chunks (a row group each)
    each get their 8 examples of a global batch of 512, in rank order the first 512 of the order, where the
    order used to need a chunk per rank and worker."""
    shards = open_shards(tiny_shards)
    rows = json.loads((tiny_shards / "manifest.json").read_text())["splits"]["train"]["examples"]
    data = DataConfig(batch_size=8, chunk_rows=rows)
    streams = [ShardStream(shards, "train", data, rank=r, world_size=64) for r in range(64)]
    assert len(streams[0].chunks) < 64
    by_rank = [row_keys(next(iter(stream))) for stream in streams]
    one = ShardStream(shards, "train", DataConfig(batch_size=512, chunk_rows=rows))
    assert [k for keys in by_rank for k in keys] == row_keys(next(iter(one)))


@pytest.fixture(scope="module")
def whole_word_shards(tmp_path_factory, demo_text) -> Path:
    """Shards masked with whole words at 30% (the manifest says so), over a vocab with [unusedN] slots."""
    from corpusprep.pair.build import PairOptions, build_pairs
    from corpusprep.read import ReadOptions
    from corpusprep.shard.build import build_shards
    from corpusprep.shard.options import ShardOptions
    from corpusprep.tokenize.vocab import VocabOptions, train_vocab

    out = tmp_path_factory.mktemp("whole_word_shards")
    train_vocab([demo_text], out / "vocab", VocabOptions(vocab_size=2000, reserved=50))
    options = PairOptions(max_seq_length=64, dupe_factor=1, validation_fraction=0.0)
    build_pairs([demo_text], out / "vocab", out / "pairs", options, ReadOptions(), context=quiet(1))
    masking = ShardOptions(num_shards=2, mask_strategy="whole-word", masked_lm_prob=0.3,
                           max_predictions_per_seq=16, seed=4)
    build_shards(out / "pairs", out / "vocab", out / "shards", masking, context=quiet(1))
    return out / "shards"


def masking_statistics(tables: list, vocab) -> dict[str, float]:
    """What the masking rule promises, measured on rows: the prediction rate per token, the 80/10/10
    shares, the most predictions in a row, reserved or special tokens drawn as replacements, and `##`
    pieces predicted without the start of their word (whole-word masking never does that)."""
    from corpusprep.mask.examples import list_parts

    totals = Counter()
    for table in tables:
        offsets, ids = list_parts(table["input_ids"])
        pred_offsets, positions = list_parts(table["masked_lm_positions"])
        _, labels = list_parts(table["masked_lm_ids"])
        row = np.repeat(np.arange(table.num_rows), np.diff(pred_offsets))
        flat = offsets[row] + positions.astype(np.int64)
        shown = ids[flat]
        original = ids.astype(np.int64)
        original[flat] = labels
        predicted = np.zeros(len(ids), bool)
        predicted[flat] = True
        piece = vocab.is_continuation[original]
        # a ## piece predicted, the word piece before it not (a segment may start with a ## piece: truncation)
        orphan = predicted[1:] & piece[1:] & ~predicted[:-1] & ~vocab.is_special[original[:-1]]
        random = (shown != vocab.mask_id) & (shown != labels)
        totals.update({
            "tokens": len(ids), "predicted": len(labels), "mask": int((shown == vocab.mask_id).sum()),
            "random": int(random.sum()), "kept": int((shown == labels).sum()),
            "special_drawn": int(vocab.is_special[shown[random]].sum()), "orphans": int(orphan.sum()),
        })
        totals["max_per_row"] = max(totals["max_per_row"], int(np.diff(pred_offsets).max(initial=0)))
    n = totals["predicted"]
    return {"rate": n / totals["tokens"], "mask": totals["mask"] / n, "random": totals["random"] / n,
            "kept": totals["kept"] / n, "max_per_row": totals["max_per_row"],
            "special_drawn": totals["special_drawn"], "orphans": totals["orphans"]}


@pytest.mark.slow  # ~1.9 s idle
def test_the_loaders_dynamic_masking_follows_the_shards_rule(whole_word_shards):
    """One masking rule: the trainer's dynamic masking, over an epoch of the same rows, gives what the
    shard stage's static masking gave (rate, 80/10/10, the per-row cap, whole words, never a special or
    [unusedN] token drawn), with the manifest's options (whole words, 30%, cap 16), not defaults."""
    from corpusprep.tokenize import VocabInfo

    shards = open_shards(whole_word_shards)
    vocab = VocabInfo.load(shards.vocab_info().directory / "vocab.txt")
    assert vocab.is_special.sum() > 50  # the reserved slots are there to be (never) drawn
    static = [pq.read_table(p) for p in sorted((whole_word_shards / "train").glob("*.parquet"))]
    stream = ShardStream(shards, "train", DataConfig(batch_size=64, dynamic_masking=True), seed=9,
                         shuffle=False, loop=False)
    dynamic = list(stream.rows())
    assert sum(t.num_rows for t in dynamic) == sum(t.num_rows for t in static)  # > 5,000 rows
    before, after = masking_statistics(static, vocab), masking_statistics(dynamic, vocab)
    assert after["rate"] == pytest.approx(before["rate"], abs=0.003) and 0.22 < after["rate"] < 0.3
    for share, expected in (("mask", 0.8), ("random", 0.1), ("kept", 0.1)):
        assert after[share] == pytest.approx(expected, abs=0.015)
        assert before[share] == pytest.approx(expected, abs=0.015)
    assert after["max_per_row"] == before["max_per_row"] == 16
    assert after["special_drawn"] == before["special_drawn"] == 0
    assert after["orphans"] == before["orphans"] == 0


def test_rows_the_model_cannot_take_are_one_line_errors_naming_where():
    """Shards whose checksums were rewritten over bad rows: a label of 2 would be an IndexError deep in the
    loss, pieces that do not tile a row would misplace attention. The reader says where, in one line."""
    import pyarrow as pa

    from corpusprep.objectives import objective
    from trainer.batch import check_rows

    pairs = pa.table({"input_ids": [[2, 5, 3]], "next_sentence_label": pa.array([2], pa.uint8())})
    with pytest.raises(DataError, match=r"^s.parquet: row group 0, row 0: next_sentence_label is 2, not 0"):
        check_rows(pairs, objective("nsp"), "s.parquet: row group 0")
    def packed(starts: list[int]) -> pa.Table:
        ids = [[2, 5, 3, 2, 6, 3]]  # [CLS] a [SEP] [CLS] b [SEP]: pieces at 0 and 3
        return pa.table({"input_ids": ids, "document_starts": pa.array([starts], pa.list_(pa.uint16()))})

    for starts in ([0, 5, 7], [1], [0, 0]):
        with pytest.raises(DataError, match=r"^s.parquet: row group 3: document_starts"):
            check_rows(packed(starts), objective("none"), "s.parquet: row group 3")
    check_rows(packed([0, 3]), objective("none"), "s.parquet")


def test_shards_lacking_the_objectives_column_are_one_line_errors(tiny_shards):
    """A manifest that says sop over nsp files (hand-edited): pyarrow would just leave the column out."""
    from corpusprep.objectives import objective
    from trainer.data import _RowGroupReader
    from trainer.shards import BASE_COLUMNS

    files = open_shards(tiny_shards).files("train")
    reader = _RowGroupReader(files, objective("sop"), [*BASE_COLUMNS, "sentence_order_label"])
    with pytest.raises(DataError, match=r"row group 0: no column sentence_order_label \(sop shards"):
        reader.read(0, 0)
