"""What each numeric option of the data commands may be: the one mechanism behind the up-front checks of
`vocab`, `build-pairs` and `shard`, whether the options come from flags, a pipeline's tables or the library.

Each options dataclass (`VocabOptions`, `PairOptions`, `ShardOptions`) declares each numeric field's `Range`
with the field (`corpusprep.flags`), lists them in its `ranges()` (with those that depend on other fields)
and checks them in its `check()`, which construction runs, so no stage is given a value the code cannot
honour: one line naming the option (flag and field) and its range, exit 2, before anything is
read or written (`--seed 18446744073709551616` used to write shards that `validate` then called invalid).
Standard library only: the command line imports it at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from corpusprep.errors import UsageError


@dataclass(frozen=True)
class Range:
    """An integer from `low` to `high` (inclusive), or with `integer=False` a finite number in that
    interval (`open_low`/`open_high`: the end itself excluded); `optional`: None too (a default chosen
    later). `why`: where a bound comes from, said with it."""

    low: float
    high: float
    integer: bool = True
    open_low: bool = False
    open_high: bool = False
    optional: bool = False
    why: str = ""
    # also a command-line flag (--name-with-dashes), else a library or pipeline setting: as declared
    # (`corpusprep.flags.declared_ranges` sets it)
    flag: bool = True

    def holds(self, value: Any) -> bool:
        if value is None:
            return self.optional
        kinds = int if self.integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            return False
        if isinstance(value, float) and not math.isfinite(value):  # an int of any size compares exactly
            return False
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below

    def describe(self) -> str:
        if self.integer:
            text = f"an integer from {self.low:,} to {self.high:,}"
        else:
            text = (f"a number in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}"
                    f"{')' if self.open_high else ']'}")
        if self.optional:
            text += ", or left out"
        return text + (f" ({self.why})" if self.why else "")


# Every stage's seed: the manifests and stats record it as a signed 64-bit integer (records.SEED), and a seed
# keys numpy generators, which take no negative one.
SEED = Range(0, 2**63 - 1, why="2^63 - 1, the largest a manifest records")


def shown(value: Any) -> str:
    """A value as a message shows it: an integer with thousands separators, anything else as Python writes
    it (a string quoted, so `"16"` is told from 16)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return repr(value)


def check_ranges(options: Any, ranges: Mapping[str, Range], command: str) -> None:
    """The first field of `options` out of its range, as one UsageError line naming the command, the flag,
    the field and the range: `shard: --seed (seed) 18,446,744,073,709,551,616: must be an integer from 0 to
    9,223,372,036,854,775,807 (2^63 - 1, ...)`."""
    for name, allowed in ranges.items():
        value = getattr(options, name)
        if not allowed.holds(value):
            option = f"--{name.replace('_', '-')} ({name})" if allowed.flag else name
            raise UsageError(f"{command}: {option} {shown(value)}: must be {allowed.describe()}")
