"""Check a mapping of settings (a pipeline's TOML table, `--set` values) against an options dataclass's
field types, so that `dupe_factor = "five"` is one line naming the key, not a TypeError deep in a stage."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corpusprep.engine.records import MAX_DEPTH, read_bytes, too_deep
from corpusprep.errors import DataError, UsageError

# The most passes over the data a stage takes (build-pairs --dupe-factor, shard --dupe-masks): each pass is a
# task and a file per partition, so 10^9 would exhaust memory listing them; BERT and RoBERTa use 10.
MAX_PASSES = 1000
_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _allowed(hint: Any) -> tuple[type, ...]:
    """The plain types a field accepts: `int | None` -> (int, NoneType)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(t for arg in typing.get_args(hint) for t in _allowed(arg))
    return (typing.get_origin(hint) or hint,)


def _coerce(value: Any, allowed: tuple[type, ...]) -> Any:
    """`value` as one of `allowed`, or raise TypeError. An integer is a valid float (TOML `prob = 1`); a bool
    is never a number, and a string is never converted (`"8000"` is a mistake worth a message)."""
    if value is None and type(None) in allowed:
        return None
    if isinstance(value, bool):
        if bool in allowed:
            return value
    elif isinstance(value, int) and int in allowed:
        return value
    elif isinstance(value, (int, float)) and float in allowed:
        return float(value)
    elif isinstance(value, float) and int in allowed and value.is_integer():
        return int(value)
    elif any(t not in (bool, int, float, type(None)) and isinstance(value, t) for t in allowed):
        return value
    raise TypeError


def check_settings(cls: type, section: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`section` checked against the fields of dataclass `cls` (names and types), values coerced where safe.
    Raises UsageError naming `where.key`, the expected type and the value given."""
    if not isinstance(section, Mapping):
        raise UsageError(f"{where}: expected a table of settings, got {section!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    checked = {}
    for key, value in section.items():
        if key not in fields:
            raise UsageError(f"{where}.{key}: unknown setting (known: {', '.join(sorted(fields))})")
        allowed = _allowed(hints[key])
        try:
            checked[key] = _coerce(value, allowed)
        except TypeError:
            names = [_NAMES.get(t, t.__name__) for t in allowed if t is not type(None)]
            optional = " (or leave it out)" if type(None) in allowed else ""
            expected = " or ".join(names) + optional
            raise UsageError(f"{where}.{key}: expected {expected}, got {value!r}") from None
    return checked


def choice(what: str, value: object, choices: tuple[str, ...], error: type[UsageError] = UsageError) -> str:
    """`value` as one of `choices`, in any case (`PARQUET` is parquet), or one line naming them: the one rule
    for a named choice, whether it comes from a flag or a pipeline file (the options dataclasses call it)."""
    name = value.lower() if isinstance(value, str) else value
    if name not in choices:
        raise error(f"unknown {what} {value!r} (choose from {', '.join(choices)})")
    return name


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the machine's physical memory, or a smaller cgroup (container)
    limit; None where neither can be read. For refusing sizes up front that could never fit."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(OSError, ValueError):
            total = min(total, int(Path(limit_file).read_text().split()[0]))  # "max": no limit (ValueError)
    return total


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """A TOML document read as untrusted text (a pipeline file from a paper's repository, a trainer config,
    a `--set` value): invalid, an integer of thousands of digits, or nested deeper than the records' rule
    (records.MAX_DEPTH) is one UsageError line naming `where`, never a RecursionError."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise UsageError(f"{where}: reading TOML needs Python >= 3.11 or `pip install tomli`") from None
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise UsageError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)") from None
    except ValueError as e:  # TOMLDecodeError, or an integer beyond Python's digit limit
        raise UsageError(f"{where}: invalid TOML ({e})") from None
    if too_deep(data):
        raise UsageError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
    return data


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The TOML file `path` (`what`: "pipeline file", "config"), read as the records are (a regular file,
    never a FIFO, of bounded size) and parsed by `parse_toml`; any failure one UsageError line."""
    try:
        text = read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 text (byte {e.start}); TOML files are UTF-8") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read {what} ({e.strerror})") from None
    except DataError as e:  # a FIFO, a device, a file of gigabytes
        raise UsageError(str(e)) from None
    return parse_toml(text, str(path))
