"""A safetensors file's header, read and checked without torch (`corpusprep validate` needs none), before
a byte of its tensors is loaded: every tensor's dtype, shape and byte range, the ranges tiling the data
exactly up to the end of the file. Checkpoints (trainer.checkpoint) and exports (trainer.export) hold their
tensors in such files; anything else (a pickle, a truncated or padded file) is one line naming the file."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from corpusprep.engine import records, storage
from corpusprep.engine.records import (
    COUNT,
    Either,
    Int,
    ListOf,
    MapOf,
    Obj,
    Rule,
    Str,
    check_record,
    parse_json,
)
from corpusprep.errors import DataError

FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")  # safetensors' names of the dtypes a model's weights may have
# bytes per element of each safetensors dtype
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
               "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
MAX_HEADER = 100 * 2**20  # safetensors' own limit


def safetensors_header(path: str | Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{tensor name: (dtype, shape)} of a safetensors file, its header checked as a record (kind
    "safetensors_header": every tensor's dtype, shape and byte range, the ranges tiling the data exactly up
    to the end of the file). Read without torch, so `validate` needs none; one DataError line naming the file
    and the tensor for anything else (a pickle, a truncated or padded file, overlapping tensors)."""
    with storage.open_file(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)  # a local file's or an object's (no file descriptor) size
        f.seek(0)
        head = f.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 2 <= length <= min(MAX_HEADER, size - 8):
            raise DataError(f"{path}: not a safetensors file (no header; a pickle or another format, or cut "
                            "short)")
        header = check_record(parse_json(f.read(length), path), "safetensors_header", path)
    spans = sorted((entry["data_offsets"], name) for name, entry in header.items() if name != "__metadata__")
    end = 0
    for (begin, stop), name in spans:
        entry = header[name]
        count = math.prod(entry["shape"])
        if begin != end or stop - begin != count * DTYPE_BYTES[entry["dtype"]]:
            raise DataError(f"{path}: {json.dumps(name)}.data_offsets: [{begin}, {stop}] is not the "
                            f"{count} x {entry['dtype']} after byte {end}")
        end = stop
    if 8 + length + end != size:
        raise DataError(f"{path}: {size:,} bytes, its header describes {8 + length + end:,} (cut short or "
                        "padded)")
    return {n: (e["dtype"], tuple(e["shape"])) for n, e in header.items() if n != "__metadata__"}


TENSOR_ENTRY = Obj({"dtype": Str(tuple(DTYPE_BYTES)), "shape": ListOf(Int(0, 2**40), 16),
                    "data_offsets": ListOf(COUNT, 2, 2)}, extra=False)
SAFETENSORS_HEADER = Rule(
    MapOf(Either(TENSOR_ENTRY, MapOf(Str()))),  # MapOf(Str()): "__metadata__"
    lambda h: next(((json.dumps(n), "not a tensor's entry") for n, e in h.items()
                    if (n == "__metadata__") == ("dtype" in e)), None),
)

records.register(__name__, {"safetensors_header": SAFETENSORS_HEADER})
