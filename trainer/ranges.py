"""The tests of a training setting's range that the config's sections share (trainer.config's RANGES,
trainer.model_config's MODEL_RANGES): each a (test, what the value must be) pair, for the trainer's one-line
messages (`config: optim.lr=-1.0 must be a number >= 0`). The data commands' options have their own
mechanism, corpusprep.ranges."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

RangeCheck = tuple[Callable[[Any], bool], str]


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def is_fraction(value: Any) -> bool:
    return is_number(value) and 0 <= value < 1


AT_LEAST_ONE: RangeCheck = (lambda v: is_whole(v, 1), "an integer >= 1")
AT_LEAST_ZERO: RangeCheck = (lambda v: is_whole(v, 0), "an integer >= 0")
FRACTION: RangeCheck = (is_fraction, "in [0, 1)")
POSITIVE: RangeCheck = (lambda v: is_number(v) and v > 0, "a number > 0")
NON_NEGATIVE: RangeCheck = (lambda v: is_number(v) and v >= 0, "a number >= 0")
BOOL: RangeCheck = (lambda v: isinstance(v, bool), "true or false")


def one_of(choices: tuple[str, ...]) -> RangeCheck:
    return (lambda v: isinstance(v, str) and v in choices), f"one of {', '.join(choices)}"
