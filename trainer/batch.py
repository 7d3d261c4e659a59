"""A training batch, from both ends: `collate` makes one of shard rows (the flat, unpadded tokens of the
rows and where each sequence lies), after `check_rows` has checked what the model's indexing relies on;
`forward_loss` runs the model on one (`MODEL_INPUTS`: what the model takes of it) and gives its losses.
The stream (trainer.data) collates in its DataLoader workers; the trainer and the validation statistics
(trainer.validation) run the model."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch
from torch import nn

from corpusprep.engine.arrow import to_numpy
from corpusprep.errors import DataError
from corpusprep.mask.examples import list_parts
from corpusprep.objectives import objective
from corpusprep.objectives.base import Objective
from trainer.model import pretraining_loss

# A batch's flat tokens are padded up to a multiple of this, so that its shapes repeat from batch to batch
# (allocator blocks and compiled kernels are reused) at a cost of < 64 tokens of padding a batch on average.
TOKEN_MULTIPLE = 128


def collate(table: pa.Table, pad_id: int, multiple: int = 8, spec: Objective | None = None) -> dict:
    """Rows -> one unpadded batch, as `trainer.model.BertForPreTraining.forward` takes it (built here, in the
    DataLoader workers, so that the model never looks for the padding itself: no host-device sync).

    The real tokens of all rows, concatenated, then [PAD] up to a multiple of TOKEN_MULTIPLE (at least one):
      input_ids, token_type_ids, position_ids: [T]; position ids restart at each sequence
      cu_seqlens: int32 [S+1], sequence s is tokens cu_seqlens[s]:cu_seqlens[s+1]. A sequence is a row, or a
        piece of a packed row; the padding tail follows as sequences of at most L tokens.
      rows: [R, L], the token at column i of row r, L = longest row rounded up to `multiple`; past a row's end
        the first padding token. slots: [T], each token's place r * L + i in `rows` (padding: 0).
      mlm_positions, mlm_labels: [M], the masked tokens' flat positions in [T] and their original ids.
      sentence_labels: [R] with a sentence task. num_tokens: the real tokens (an int, for throughput).
    """
    spec = spec or objective(None)
    offsets, ids = list_parts(table["input_ids"])
    _, types = list_parts(table["token_type_ids"])
    pos_offsets, positions = list_parts(table["masked_lm_positions"])
    _, labels = list_parts(table["masked_lm_ids"])
    lengths = np.diff(offsets)
    R, n = len(lengths), len(ids)
    L = -(-int(lengths.max()) // multiple) * multiple
    T = -(-(n + 1) // TOKEN_MULTIPLE) * TOKEN_MULTIPLE
    seq_lengths = _piece_lengths(table["document_starts"], lengths) if spec.packs else lengths
    tail = np.full(-(-(T - n) // L), L)  # the padding, in sequences no longer than a row
    tail[-1] = T - n - L * (len(tail) - 1)
    cu_seqlens = np.concatenate([[0], np.cumsum(np.concatenate([seq_lengths, tail]))]).astype(np.int32)
    row = np.repeat(np.arange(R), lengths)
    col = np.arange(n) - offsets[row]
    rows = np.full((R, L), n, dtype=np.int64)
    rows[row, col] = np.arange(n)
    position_ids = np.zeros(T, dtype=np.int64)
    position_ids[:n] = np.arange(n) - np.repeat(cu_seqlens[: len(seq_lengths)], seq_lengths)
    batch = {
        "input_ids": torch.from_numpy(_padded(ids, T, pad_id)),
        "token_type_ids": torch.from_numpy(_padded(types, T, 0)),
        "position_ids": torch.from_numpy(position_ids),
        "cu_seqlens": torch.from_numpy(cu_seqlens),
        "rows": torch.from_numpy(rows),
        "slots": torch.from_numpy(_padded(row * L + col, T, 0)),
        "mlm_positions": torch.from_numpy(np.repeat(offsets[:-1], np.diff(pos_offsets)) + positions),
        "mlm_labels": torch.from_numpy(labels.astype(np.int64)),
        "num_tokens": n,
    }
    if not spec.packs:
        batch["sentence_labels"] = torch.from_numpy(to_numpy(table[spec.shard_label]).astype(np.int64))
    return batch


def _padded(values: np.ndarray, length: int, fill: int) -> np.ndarray:
    out = np.full(length, fill, dtype=np.int64)
    out[: len(values)] = values
    return out


def check_rows(table: pa.Table, spec: Objective, where: str) -> None:
    """What the model's indexing relies on, once per row group read: a sentence label of 0 or 1, or pieces
    that tile the row (a shard whose checksums were rewritten over bad rows fails here, in one line)."""
    if spec.packs:
        try:
            _piece_lengths(table["document_starts"], np.diff(list_parts(table["input_ids"])[0]))
        except DataError as e:
            raise DataError(f"{where}: {e}") from None
    elif len(labels := to_numpy(table[spec.shard_label])) and labels.max() > 1:
        row = int(np.argmax(labels > 1))
        raise DataError(f"{where}, row {row}: {spec.shard_label} is {labels[row]}, not 0 or 1")


def _piece_lengths(column: pa.ChunkedArray, lengths: np.ndarray) -> np.ndarray:
    """int64[P]: tokens of each piece, row by row, from each row's `document_starts`."""
    start_offsets, starts = list_parts(column)
    per_row = np.diff(start_offsets)
    ends = np.append(starts[1:], 0).astype(np.int64)
    ends[start_offsets[1:][per_row > 0] - 1] = lengths[per_row > 0]  # a row's last piece ends with the row
    pieces = ends - starts
    row_starts = starts[start_offsets[:-1][per_row > 0]] if len(starts) else starts
    if (per_row < 1).any() or (pieces < 1).any() or (row_starts != 0).any():
        raise DataError("document_starts: a row whose pieces do not start at 0 and increase within the row")
    return pieces


# what the model takes from a batch (trainer.data.collate): the flat tokens and where the sequences lie
MODEL_INPUTS = ("input_ids", "token_type_ids", "position_ids", "cu_seqlens", "rows", "slots", "mlm_positions")


def to_device(batch: dict, device: torch.device) -> dict:
    """The batch's tensors on `device` (pinned memory: asynchronous copies); its counts stay as they are."""
    return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


def forward_loss(model: nn.Module, batch: dict, autocast) -> tuple:
    """(MLM logits, sentence logits or None, total loss, MLM loss, sentence loss or None) of one batch."""
    with autocast():
        mlm_logits, sentence_logits = model(**{k: batch[k] for k in MODEL_INPUTS})
    losses = pretraining_loss(mlm_logits, batch["mlm_labels"], sentence_logits, batch.get("sentence_labels"))
    return mlm_logits, sentence_logits, *losses
