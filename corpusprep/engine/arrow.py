"""numpy and Python values <-> Arrow arrays, without pyarrow importing pandas.

`pa.array` and `Array.to_numpy` ask pyarrow's pandas shim whether their input is a pandas object, and the
shim imports pandas to answer: 0.2-0.3 CPU-seconds, in every process, more than a command spends on a MB of
text. These build the same arrays (same type, same values: what is written from them is byte-identical)
straight from buffers instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_INT32_MAX = 2**31 - 1


def from_numpy(values: np.ndarray, type: pa.DataType | None = None) -> pa.Array:
    """A 1-D numpy array of numbers or bools as a null-free Arrow array (zero-copy for numbers); with `type`,
    converted to it first, refusing values it cannot hold (as `pa.array(values, type=type)` does)."""
    values = np.ascontiguousarray(values)
    if type is not None and type != pa.from_numpy_dtype(values.dtype):
        converted = values.astype(np.dtype(type.to_pandas_dtype()))  # a numpy dtype; pandas not involved
        if not np.array_equal(converted, values):
            raise OverflowError(f"values out of range for {type}")
        values = converted
    if values.dtype == bool:  # Arrow packs bools, one bit each
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def to_numpy(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A null-free Arrow array of numbers or bools as numpy (zero-copy for numbers)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count:
        raise ValueError("null values")
    data = array.buffers()[1]
    if pa.types.is_boolean(array.type):
        bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
        return bits[array.offset : array.offset + len(array)].view(bool)
    dtype = np.dtype(array.type.to_pandas_dtype())
    return np.frombuffer(data, dtype, len(array), array.offset * dtype.itemsize)


def _validity(values: Sequence[object], nulls: int) -> pa.Buffer | None:
    """The validity bitmap of `values`, which hold `nulls` Nones (none needed when they hold none)."""
    if not nulls:
        return None
    valid = np.fromiter((v is not None for v in values), bool, len(values))
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _offsets(lengths: np.ndarray, large: bool) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets if large else offsets.astype(np.int32)


def strings(values: Sequence[str | None], type: pa.DataType | None = None) -> pa.Array:
    """Python strings (None: null) as an Arrow string array, or large_string with `type=pa.large_string()`."""
    type = pa.string() if type is None else type
    large = pa.types.is_large_string(type)
    nulls = values.count(None)
    encoded = [b"" if v is None else v.encode() for v in values] if nulls else list(map(str.encode, values))
    lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    if not large and lengths.sum() > _INT32_MAX:  # over 2 GiB: pa.array splits it into chunks
        return pa.array(values, type)
    offsets, data = _offsets(lengths, large), b"".join(encoded)
    buffers = [_validity(values, nulls), pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(type, len(values), buffers, null_count=nulls)


def string_lists(values: Sequence[Sequence[str] | None]) -> pa.Array:
    """Lists of Python strings (None: a null list) as an Arrow list<string> array."""
    flat = [s for v in values if v is not None for s in v]
    lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, len(values))
    items = strings(flat)
    if isinstance(items, pa.ChunkedArray):
        return pa.array(values, pa.list_(pa.string()))
    nulls, offsets = values.count(None), pa.py_buffer(_offsets(lengths, False))
    return pa.Array.from_buffers(
        pa.list_(pa.string()), len(values), [_validity(values, nulls), offsets], null_count=nulls,
        children=[items],
    )
