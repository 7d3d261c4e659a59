"""engine.arrow builds the arrays `pa.array` would, and never imports pandas."""

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from corpusprep.engine import arrow


@pytest.mark.parametrize(
    "values, type",
    [
        (np.array([True, False, True, True, False, False, False, False, True]), None),
        (np.arange(7, dtype=np.int32), None),
        (np.arange(5, dtype=np.uint16)[::2], None),  # not contiguous
        (np.array([0, 3, 2**32 - 1]), pa.uint32()),
        (np.zeros(0, np.int64), None),
    ],
)
def test_from_numpy_equals_pa_array(values, type):
    built = arrow.from_numpy(values, type)
    built.validate(full=True)
    assert built.equals(pa.array(values, type=type))
    assert np.array_equal(arrow.to_numpy(built), values)


def test_from_numpy_refuses_values_the_type_cannot_hold():
    with pytest.raises(OverflowError, match="uint32"):
        arrow.from_numpy(np.array([1, -1]), pa.uint32())


@pytest.mark.parametrize("type", [pa.string(), pa.large_string()])
def test_strings_equal_pa_array(type):
    values = ["a", None, "héllo wörld", "", "日本語", None]
    built = arrow.strings(values, type)
    built.validate(full=True)
    assert built.type == type and built.null_count == 2
    assert built.equals(pa.array(values, type))
    assert arrow.strings([], type).equals(pa.array([], type))


def test_string_lists_equal_pa_array():
    values = [["x", "yé"], None, [], ("z",), None]
    built = arrow.string_lists(values)
    built.validate(full=True)
    assert built.equals(pa.array([None if v is None else list(v) for v in values], pa.list_(pa.string())))
    assert arrow.string_lists([]).equals(pa.array([], pa.list_(pa.string())))


def test_to_numpy_respects_slices_and_chunks():
    array = pa.chunked_array([arrow.from_numpy(np.arange(10, dtype=np.int64)).slice(3, 4)])
    assert arrow.to_numpy(array).tolist() == [3, 4, 5, 6]
    bools = arrow.from_numpy(np.array([True, False, True, True])).slice(1, 3)
    assert arrow.to_numpy(bools).tolist() == [False, True, True]


def test_no_pandas_imported():
    code = (
        "import sys, numpy as np, pyarrow as pa\n"
        "from corpusprep.engine import arrow\n"
        "arrow.to_numpy(arrow.from_numpy(np.arange(3), pa.uint32()))\n"
        "arrow.string_lists([['a'], None]); arrow.strings(['b', None], pa.large_string())\n"
        "print('pandas' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == "False\n"
