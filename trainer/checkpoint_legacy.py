"""Checkpoints of earlier formats: the pickled one (`*.pt`, which can run code when loaded, even restricted
to weights) is refused with one line (`refuse_pickled`); an earlier trainer's data position per rank and
DataLoader worker is converted to a place in the global order where it was one stream
(`converted_position`), and refused, saying why, where it was several."""

from __future__ import annotations

from pathlib import Path

from corpusprep.engine import storage
from corpusprep.engine.outputs import PICKLED_CHECKPOINT
from corpusprep.errors import DataError
from trainer.config import MAX_BATCH_SIZE
from trainer.data import Position

PICKLED = PICKLED_CHECKPOINT  # the earlier format's files


def refuse_pickled(path: Path) -> None:
    """One line for a checkpoint of the earlier format, whose pickled files corpusprep no longer loads."""
    if found := [name for name in PICKLED if storage.exists(path / name)]:
        raise DataError(
            f"{path / found[0]}: a checkpoint in the earlier pickled format, which corpusprep no longer "
            "loads (unpickling a file can run code); train again, or convert it with the corpusprep release "
            "that wrote it (`python -m trainer.export` it there, then `python -m trainer.import_hf` it here)"
        )


def converted_position(state: dict, grad_accum: int, where: Path, epoch_examples: int | None) -> Position:
    """An earlier trainer's `positions` (per rank: batches, and rows per DataLoader worker role) as a
    `Position`, when it was one stream; else one line saying why it cannot be."""
    positions = state.get("positions")
    if not positions:
        raise DataError(f"{where}: data: missing (the data position)")
    step, rows = state["step"], [len(p["rows"]) for p in positions]
    if len(positions) > 1 or rows[0] > 1:
        raise DataError(f"{where}: positions: a data position per worker stream ({len(positions)} rank(s) x "
                        f"{max(rows)} DataLoader worker(s)), from an earlier trainer whose order depended on "
                        "them: not a place in the global order; resume with the release that wrote it, or "
                        "start a new run dir with --init-from this checkpoint")
    batches, consumed = positions[0]["batches"], sum(positions[0]["rows"])
    if batches != step * grad_accum or not batches <= consumed <= batches * MAX_BATCH_SIZE:
        raise DataError(f"{where}: positions[0]: {batches} batches of {consumed} rows, not what the "
                        f"{step} x {grad_accum} micro-batches of step {step} hold")
    return Position(*divmod(consumed, epoch_examples)) if epoch_examples else Position(0, consumed)
