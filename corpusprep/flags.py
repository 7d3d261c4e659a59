"""An option declared once: the field of its options dataclass (`PairOptions`, `ShardOptions`, `VocabOptions`,
`CurateOptions`, `SentencesOptions`) holds its name, type, default, command-line help and range, and the rest
follows from that one line:

    max_seq_length: int = flag(128, "Row length with special tokens.", range=Range(5, 65_535))
    docs_per_chunk: int = setting(256, range=Range(1, MAX_CHUNK_DOCS))  # no flag: library and pipelines
    splitter: str = like(SentencesOptions, "splitter")                  # another command's option, as it is

- the command's flag `--max-seq-length` (`corpusprep/cli/options.py`, `with_options`: the typer options
  in field order, and the dataclass built from them);
- a pipeline's table (`PairOptions(**section)`, its types checked by `corpusprep.settings`);
- the range check every construction runs (`declared_ranges`, `corpusprep.ranges.check_ranges`).

Standard library only: the command line imports it at start-up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corpusprep.ranges import Range

FLAG, RANGE = "corpusprep.flag", "corpusprep.range"  # the keys of a field's metadata
SEED_HELP = "Seed for every random choice; same seed, same output."


class _FieldDefault:
    def __repr__(self) -> str:
        return "FIELD_DEFAULT"


FIELD_DEFAULT = _FieldDefault()  # a flag's default is its field's


@dataclass(frozen=True)
class Flag:
    """How a field is offered on the command line: its help, and what differs from the field, if anything."""

    help: str
    decls: tuple[str, ...] = ()  # click's declarations when not `--name-with-dashes`: "--pack/--no-pack"
    metavar: str | None = None  # "nsp|sop|none": the choices, where `<str>` would say too little
    show_default: bool = True
    cli_type: Any = None  # the type the command line parses, when not the field's (`Path | None`)
    cli_default: Any = FIELD_DEFAULT  # the command line's, when not the field's (None: decided later)
    parse: Callable[[Any], Any] | None = None  # the parsed value -> the field's ("en,fr" -> ("en", "fr"))


def flag(default: Any, help: str, *, range: Range | None = None, **cli: Any) -> Any:
    """A field that is also a command-line flag (`Flag`'s fields as keywords), with its range if numeric."""
    metadata = {FLAG: Flag(help, **cli), **({RANGE: range} if range is not None else {})}
    return dataclasses.field(default=default, metadata=metadata)


def setting(default: Any, *, range: Range) -> Any:
    """A field that is no flag (a library or pipeline setting), with its range."""
    return dataclasses.field(default=default, metadata={RANGE: range})


def like(options: type, name: str) -> Any:
    """The field `name` of the options dataclass `options`, for another one: the same default, help, range."""
    found = {f.name: f for f in dataclasses.fields(options)}[name]
    return dataclasses.field(default=found.default, metadata=found.metadata)


def flags(options: type) -> list[tuple[dataclasses.Field, Flag]]:
    """The fields of `options` that are flags, with their `Flag`, in field order (the order of the help)."""
    return [(f, f.metadata[FLAG]) for f in dataclasses.fields(options) if FLAG in f.metadata]


def declared_ranges(options: type) -> dict[str, Range]:
    """The range declared with each field of `options` that has one, in field order; `flag` set from the
    declaration (a message names `--the-flag (the_field)`, or the field alone)."""
    return {f.name: dataclasses.replace(f.metadata[RANGE], flag=FLAG in f.metadata)
            for f in dataclasses.fields(options) if RANGE in f.metadata}
