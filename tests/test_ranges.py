"""Every numeric option of vocab, build-pairs and shard is checked against the range the code can honour, up
front, by the options' own `check()` (corpusprep/ranges.py): one line naming the flag, the field and the
range, exit 2, nothing written."""

from __future__ import annotations

import contextlib
import io
import math
import sys

import pytest

from corpusprep.errors import UsageError, guarded
from corpusprep.pair.options import PairOptions
from corpusprep.ranges import SEED, Range
from corpusprep.shard.options import ShardOptions
from corpusprep.tokenize.options import MAX_VOCAB_SIZE, VocabOptions

OPTIONS = {  # vocab at its largest size: room for the most reserved slots
    "vocab": VocabOptions(vocab_size=MAX_VOCAB_SIZE),
    "build-pairs": PairOptions(),
    "build-pairs sop": PairOptions(objective="sop"),
    "shard": ShardOptions(),
}


def outside(allowed: Range) -> list:
    """Values just out of the range, and values of the wrong kind."""
    if allowed.integer:
        values = [allowed.low - 1, allowed.high + 1, float(allowed.low), True, str(allowed.low)]
    else:
        values = [allowed.low - 0.01, allowed.high + 0.01, math.nan, math.inf, "0.5", None]
        values += [allowed.low] * allowed.open_low + [allowed.high] * allowed.open_high
    return values if allowed.optional else [*values, None]


def inside(allowed: Range) -> list:
    """The closed ends, a value between them, and None where the option may be left out."""
    middle = (allowed.low + allowed.high) // 2 if allowed.integer else (allowed.low + allowed.high) / 2
    ends = [allowed.low] * (not allowed.open_low) + [allowed.high] * (not allowed.open_high)
    return [*ends, middle] + [None] * allowed.optional


@pytest.mark.parametrize("command", OPTIONS)
def test_every_numeric_option_is_refused_outside_its_range_and_kept_inside(command):
    options = OPTIONS[command]
    ranges = options.ranges()
    assert ranges, command
    for name, allowed in ranges.items():
        for value in outside(allowed):
            with pytest.raises(UsageError) as error:
                type(options)(**{**vars(options), name: value})
            said = str(error.value)
            option = f"--{name.replace('_', '-')} ({name}) " if allowed.flag else f"{name} "
            assert option in said and f": must be {allowed.describe()}" in said, said
            assert said.startswith(command.split()[0] + ": ") and "\n" not in said, said
        for value in inside(allowed):
            assert getattr(type(options)(**{**vars(options), name: value}), name) == value, (name, value)


def test_a_seed_is_what_a_manifest_records():
    assert SEED.holds(0) and SEED.holds(2**63 - 1) and not SEED.holds(2**63) and not SEED.holds(-1)
    assert "2^63 - 1" in SEED.describe()


def corpusprep(*args: str) -> tuple[int, str]:
    """`corpusprep ARGS` in this process as the entry point runs it: (exit code, stderr)."""
    from corpusprep.cli import PREFIX, _run

    err, before = io.StringIO(), sys.argv
    sys.argv = ["corpusprep", *args]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = guarded(_run, prefix=PREFIX)
    finally:
        sys.argv = before
    return code, err.getvalue()


@pytest.mark.parametrize("args, says", [
    (["shard", "pairs", "--vocab", "v", "-o", "OUT", "--seed", str(2**64)],
     "shard: --seed (seed) 18,446,744,073,709,551,616: must be an integer from 0 to 9,223,372,036,854,"),
    (["shard", "pairs", "--vocab", "v", "-o", "OUT", "--max-predictions-per-seq", "70000"],
     "shard: --max-predictions-per-seq (max_predictions_per_seq) 70,000: must be an integer from 1 to 65,"),
    (["build-pairs", "c.txt", "--vocab", "v", "-o", "OUT", "--seed", "-1"],
     "build-pairs: --seed (seed) -1: must be an integer from 0 to"),
    (["build-pairs", "c.txt", "--vocab", "v", "-o", "OUT", "--short-seq-prob", "nan"],
     "build-pairs: --short-seq-prob (short_seq_prob) nan: must be a number in [0, 1]"),
    (["vocab", "c.txt", "-o", "OUT", "--min-frequency", "0"],
     "vocab: --min-frequency (min_frequency) 0: must be an integer from 1 to 16,777,216"),
])
def test_the_commands_refuse_it_in_one_line_before_writing(tmp_path, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.txt").write_text("Some text. More text.\n")
    code, err = corpusprep(*args)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"corpusprep: error: {says}"), err
    assert not (tmp_path / "OUT").exists()
