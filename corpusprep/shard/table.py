"""Masked examples <-> Arrow tables in the shard schema, and the counts recorded in the manifest."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from corpusprep.engine import arrow
from corpusprep.engine.arrow import to_numpy
from corpusprep.errors import UsageError
from corpusprep.mask import Examples, Masked, Masking, MaskVocab, mask_examples, strategies
from corpusprep.mask.examples import list_parts, pad_rows, row_mask
from corpusprep.mask.mlm import ACTIONS, KEEP, MASK, RANDOM
from corpusprep.objectives import DEFAULT
from corpusprep.objectives import objective as objective_spec
from corpusprep.shard.schema import shard_schema


def count_keys(objective: str | None = DEFAULT) -> tuple[str, ...]:
    """The per-split and total counts of a shards manifest of this objective (beside examples and tokens,
    its `shard_counts`: the two labels (0, 1) of a sentence task, or the pieces of packed rows)."""
    return ("examples", *objective_spec(objective).shard_counts, "tokens", "masked_tokens", *ACTIONS)


def _list(offsets: np.ndarray, values: np.ndarray) -> pa.ListArray:
    return pa.ListArray.from_arrays(arrow.from_numpy(offsets), arrow.from_numpy(values))


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:  # Arrow list offsets are int32
        raise UsageError(f"{offsets[-1]:,} tokens in one shard, over 2**31: lower --examples-per-shard")
    return offsets.astype(np.int32)


def to_table(masked: Masked, objective: str = DEFAULT, cls_id: int | None = None) -> pa.Table:
    """Rows in `shard_schema(dtype, objective)`; rows of pieces (none) need `cls_id` to find the pieces."""
    ex = masked.examples
    tokens, predictions = _offsets(ex.lengths), _offsets(masked.predicted)
    predicted = row_mask(masked.predicted, masked.positions.shape[1])
    if objective_spec(objective).packs:
        if cls_id is None:
            raise ValueError("to_table of rows of pieces needs cls_id")
        offsets, columns = ex.piece_starts(cls_id)
        own = _list(offsets.astype(np.int32), columns.astype(np.uint16))  # document_starts
    else:
        own = arrow.from_numpy(ex.label.view(np.uint8))  # next_sentence_label or sentence_order_label
    return pa.Table.from_arrays(
        [
            _list(tokens, ex.flat_ids()),
            _list(tokens, ex.token_type_ids()),
            _list(predictions, masked.positions[predicted]),
            _list(predictions, masked.labels[predicted]),
            own,
            arrow.from_numpy(ex.lengths.astype(np.uint16)),
        ],
        schema=shard_schema(ex.ids.dtype, objective_spec(objective).name),
    )


def actions_of(shown: np.ndarray, labels: np.ndarray, mask_id: int) -> np.ndarray:
    """What was done at each prediction, read off the output (a random draw never equals the original)."""
    return np.where(shown == mask_id, MASK, np.where(shown == labels, KEEP, RANDOM)).astype(np.int8)


def _own_counts(objective: str | None, labels: np.ndarray | None, pieces: int) -> dict[str, int]:
    keys = objective_spec(objective).shard_counts
    if labels is None:
        return {keys[0]: pieces}
    ones = int((labels == 1).sum())
    return {keys[0]: int((labels == 0).sum()), keys[1]: ones}


def count_masked(masked: Masked, objective: str = DEFAULT, cls_id: int | None = None) -> dict[str, int]:
    """Manifest counts of a batch of examples (rows of pieces need `cls_id` to count the pieces)."""
    ex = masked.examples
    packed = objective_spec(objective).packs
    pieces = int((ex.ids == cls_id).sum()) if packed else 0
    return {
        "examples": len(ex),
        **_own_counts(objective, None if packed else ex.label.view(np.uint8), pieces),
        "tokens": int(ex.lengths.sum()),
        "masked_tokens": int(masked.predicted.sum()),
        **masked.counts(),
    }


def gather_predicted(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(token shown at each predicted position, its label, the example of each prediction, flat positions)."""
    id_offsets, ids = list_parts(table.column("input_ids"))
    pred_offsets, positions = list_parts(table.column("masked_lm_positions"))
    _, labels = list_parts(table.column("masked_lm_ids"))
    example = np.repeat(np.arange(table.num_rows), np.diff(pred_offsets))
    flat = id_offsets[example] + positions.astype(np.int64)
    return ids[np.minimum(flat, max(len(ids) - 1, 0))], labels, example, flat


def count_table(table: pa.Table, mask_id: int, objective: str = DEFAULT) -> dict[str, int]:
    """Manifest counts, recomputed from the rows of a file (robust to malformed rows, for `validate`)."""
    shown, labels, _, _ = gather_predicted(table)
    spec = objective_spec(objective)
    if spec.packs:
        starts, _ = list_parts(table.column("document_starts"))
        own = _own_counts(objective, None, int(starts[-1]) if len(starts) else 0)
    else:
        own = _own_counts(objective, to_numpy(table.column(spec.shard_label)), 0)
    actions = np.bincount(actions_of(shown, labels, mask_id), minlength=3)
    return {
        "examples": table.num_rows,
        **own,
        "tokens": int(to_numpy(table.column("num_tokens")).sum(dtype=np.int64)),
        "masked_tokens": len(labels),
        **{name: int(actions[i]) for i, name in enumerate(ACTIONS)},
    }


def examples_from_shard(table: pa.Table, pad_id: int, objective: str = DEFAULT) -> Examples:
    """The examples of shard rows as they were before masking: each prediction's label put back."""
    id_offsets, ids = list_parts(table.column("input_ids"))
    _, positions = list_parts(table.column("masked_lm_positions"))
    pred_offsets, labels = list_parts(table.column("masked_lm_ids"))
    lengths = np.diff(id_offsets)
    example = np.repeat(np.arange(table.num_rows), np.diff(pred_offsets))
    original = ids.copy()
    original[id_offsets[example] + positions.astype(np.int64)] = labels
    grid = pad_rows(original, lengths, fill=pad_id)
    spec = objective_spec(objective)
    n = table.num_rows
    if spec.packs:
        return Examples(grid, lengths, np.zeros(n, np.int64), np.zeros(n, bool), packed=True)
    type_offsets, types = list_parts(table.column("token_type_ids"))
    ones = np.add.reduceat(types.astype(np.int64), type_offsets[:-1]) if n else np.zeros(0, np.int64)
    label = to_numpy(table.column(spec.shard_label)).astype(bool)
    return Examples(grid, lengths, lengths - ones - 2, label)  # len_a: the zeros minus [CLS] and [SEP]


def remask_table(
    table: pa.Table,
    vocab: MaskVocab,
    rng: np.random.Generator,
    *,
    objective: str = DEFAULT,
    masked_lm_prob: float = 0.15,
    max_predictions_per_seq: int = 20,
    strategy: str = strategies.DEFAULT,
) -> pa.Table:
    """Dynamic masking: shard rows masked afresh from their original tokens by the same rule as `shard`
    (`mask_examples`), in the same schema. Pass the manifest's objective and options."""
    examples = examples_from_shard(table, vocab.pad_id, objective)
    masking = Masking(masked_lm_prob, max_predictions_per_seq, strategy)
    masked = mask_examples(examples, vocab, rng, masking=masking)
    return to_table(masked, objective, vocab.cls_id)
