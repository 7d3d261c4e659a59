"""The trust boundary: every record corpusprep reads back from disk is parsed here, against its schema.

Nothing on disk that this process did not just write is trusted: a manifest, a task marker, a run record,
stats, a checkpoint's metadata or a Hugging Face config may have been edited, truncated, copied from
somewhere else or written to attack. So every JSON record is read by one loader, `load_record(path, kind)`,
which checks it against the schema of its kind (types, ranges, required keys; extra keys are tolerated, for
records of a newer version, and never used) and raises one `DataError` line naming the file and the field:

    runs/x/vocab/artifact.json: files["../x"]: not a relative path inside the directory

and every name a record holds is turned into a path by one function, `inside(directory, name)`: a relative
path of plain components that stays inside its directory, no component a symbolic link (and, where
corpusprep deletes or writes, not the last one either). Checkpoints hold no pickle (trainer/checkpoint.py:
tensors in safetensors, whose header `corpusprep.engine.safetensors_file` checks, the rest in JSON read
here). `corpusprep validate` uses the same loaders, so it never calls a damaged record valid.

The schema language is a handful of classes (`Int`, `Num`, `Str`, `Bool`, `Null`, `Either`, `ListOf`,
`MapOf`, `Obj`, `Name`, `Rule`): small enough to read in one screen, and no dependency (jsonschema is not
installed at run time, and its error messages do not name a field the way a user reads it).

Each kind's schema lives with the code that writes the record, in its package's `schemas` module
(corpusprep/shard/schemas.py: the shards manifest; trainer/schemas.py: a checkpoint's records), which
declares it with `register`. One table, `PRODUCERS`, names the module of every kind, and the loader imports
that module the first time it checks a record of the kind (`schema`). A lazy table, not registration on a
producer's own import, because a reader need not have imported the producer (`corpusprep validate` of a
checkpoint, a worker reading a task marker) and the engine imports nothing from the stages above it
(tests/architecture/test_engine_layers.py): it names their modules as strings, as `engine.outputs` names
its validators. A schema module imports only this one and the registries whose names it checks
(objectives, mask strategies), so reading a record loads no torch, numpy or pyarrow. A new kind: a row in
`PRODUCERS` and the schema in its producer's module (tests/security/test_records.py checks both agree).
"""

from __future__ import annotations

import importlib
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.errors import DataError

MAX_BYTES = 512 * 2**20  # a record larger than this is no record corpusprep wrote (big manifests: a few MB)
MAX_DEPTH = 64  # deeper nesting is refused before any code walks it (ours writes at most ~8 levels)
MAX_INT = 2**63 - 1  # what a file size, a count or an offset can be


class RecordError(Exception):
    """A value that does not fit its schema: `field` names where (`files["a"].size`), `problem` what."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field, self.problem = field, problem


# ---------------------------------------------------------------------------------------------- schemas


def _what(value: Any) -> str:
    """How a JSON value is named in a message: `a string ('x')`, `a list`, `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 24 else text[:21] + "..."
    if isinstance(value, str):
        return f"a string ({json.dumps(value[:40])})"
    return "a list" if isinstance(value, list) else "an object"


def _key(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


class Schema(ABC):
    """Checks a parsed JSON value; `what` says what it expects, for messages."""

    what = "a value"

    @abstractmethod
    def check(self, value: Any, at: str) -> None: ...

    def fail(self, value: Any, at: str, expected: str | None = None) -> None:
        raise RecordError(at, f"{_what(value)}, not {expected or self.what}")


class Anything(Schema):
    """Any JSON value (its depth is bounded by the loader): data corpusprep only compares or copies."""

    def check(self, value: Any, at: str) -> None:
        return None


class Null(Schema):
    what = "null"

    def check(self, value: Any, at: str) -> None:
        if value is not None:
            self.fail(value, at)


class Bool(Schema):
    what = "true or false"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, bool):
            self.fail(value, at)


class Int(Schema):
    def __init__(self, lo: int = 0, hi: int = MAX_INT):
        self.lo, self.hi = lo, hi
        self.what = f"an integer from {lo} to {hi}" if hi != MAX_INT else f"an integer >= {lo}"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or not self.lo <= value <= self.hi:
            self.fail(value, at)


class Num(Schema):
    """A number (an integer too); finite unless `finite=False`."""

    def __init__(self, lo: float = -math.inf, hi: float = math.inf, finite: bool = True):
        self.lo, self.hi, self.finite = lo, hi, finite
        bounds = ([f">= {lo:g}"] if lo > -math.inf else []) + ([f"<= {hi:g}"] if hi < math.inf else [])
        self.what = f"{'a finite number' if finite else 'a number'} {' and '.join(bounds)}".strip()

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.fail(value, at)
        if math.isnan(value):
            if self.finite:
                self.fail(value, at)
            return
        if (self.finite and math.isinf(value)) or not self.lo <= value <= self.hi:
            self.fail(value, at)


class Str(Schema):
    def __init__(self, choices: tuple[str, ...] | None = None, pattern: str | None = None, what: str = ""):
        self.choices = choices
        self.pattern = re.compile(pattern) if pattern else None
        self.what = what or (f"one of {', '.join(map(repr, choices))}" if choices else "a string")

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, str):
            self.fail(value, at)
        if self.choices is not None and value not in self.choices:
            self.fail(value, at)
        if self.pattern is not None and not self.pattern.fullmatch(value):
            self.fail(value, at)


def name_problem(name: str) -> str | None:
    """Why `name` (read from a record) is no relative path inside a directory; None when it is one."""
    parts = name.split("/")
    if not name or any(p in ("", ".", "..") for p in parts):
        return "not a relative path inside the directory"
    if CONTROL.search(name):  # NUL; a newline would forge lines in the messages that name the file
        return "holds a control character (no name corpusprep writes does)"
    return None


CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Name(Schema):
    """A file's name relative to the directory of its record: plain components, none of them `..`. Where a
    name becomes a path, `inside` also refuses symbolic links on the way."""

    what = "a relative path inside the directory"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, str):
            self.fail(value, at)
        if problem := name_problem(value):
            raise RecordError(at, problem)


class Either(Schema):
    def __init__(self, *options: Schema):
        self.options = options
        self.what = " or ".join(o.what for o in options)

    def check(self, value: Any, at: str) -> None:
        errors = []
        for option in self.options:
            try:
                option.check(value, at)
                return
            except RecordError as error:
                errors.append(error)
        deeper = [e for e in errors if e.field != at]  # the option the value looked like: its own message
        if len(deeper) == 1:
            raise deeper[0]
        self.fail(value, at)


def Opt(schema: Schema) -> Schema:  # noqa: N802 - reads as a type
    return Either(schema, Null())


class ListOf(Schema):
    def __init__(self, item: Schema, max_len: int | None = None, min_len: int = 0):
        self.item, self.max_len, self.min_len = item, max_len, min_len
        self.what = "a list"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, list):
            self.fail(value, at)
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            most = f" and at most {self.max_len}" if self.max_len is not None else ""
            raise RecordError(at, f"{len(value)} items, not at least {self.min_len}{most}")
        for i, item in enumerate(value):
            self.item.check(item, f"{at}[{i}]")


class MapOf(Schema):
    """An object whose keys are names of things (files, tasks, splits): every key checked by `key`."""

    def __init__(self, value: Schema, key: Schema | None = None):
        self.value, self.key = value, key
        self.what = "an object"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, dict):
            self.fail(value, at)
        for k, v in value.items():
            where = f"{at}[{json.dumps(k)}]"
            if self.key is not None:
                self.key.check(k, where)
            self.value.check(v, where)


class Obj(Schema):
    """An object with `required` and `optional` fields; other keys are tolerated (a newer version's) and
    never used, unless `extra=False`; with `rest`, their values are checked by it (stats: counts by name)."""

    def __init__(self, required: dict[str, Schema], optional: dict[str, Schema] | None = None,
                 extra: bool = True, rest: Schema | None = None):
        self.required, self.optional, self.extra, self.rest = required, optional or {}, extra, rest
        self.what = "an object"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, dict):
            self.fail(value, at)
        for key, schema in self.required.items():
            if key not in value:
                raise RecordError(_key(at, key), "missing")
            schema.check(value[key], _key(at, key))
        for key, schema in self.optional.items():
            if key in value:
                schema.check(value[key], _key(at, key))
        unknown = sorted(set(value) - set(self.required) - set(self.optional))
        if unknown and not self.extra:
            raise RecordError(_key(at, unknown[0]), "not a known field")
        for key in unknown if self.rest is not None else ():
            self.rest.check(value[key], _key(at, key))


class Rule(Schema):
    """`schema`, then a check across fields: `rule(value)` returns (field, problem) or None."""

    def __init__(self, schema: Schema, rule: Callable[[Any], tuple[str, str] | None]):
        self.schema, self.rule = schema, rule
        self.what = schema.what

    def check(self, value: Any, at: str) -> None:
        self.schema.check(value, at)
        if found := self.rule(value):
            raise RecordError(_key(at, found[0]), found[1])


class Lazy(Schema):
    """A schema defined later (a recursive one)."""

    def __init__(self, get: Callable[[], Schema]):
        self.get = get

    def check(self, value: Any, at: str) -> None:
        self.get().check(value, at)


# ---------------------------------------------------------------------------------------------- loading


def read_bytes(path: str | Path, limit: int = MAX_BYTES) -> bytes:
    """A regular file's bytes: never a FIFO or a device (opened without blocking, then checked), nor a
    file larger than `limit`. A symbolic link is followed (a Hugging Face cache links every file)."""
    return storage.read_bounded(path, limit)


def parse_json(text: str | bytes, where: str | Path) -> Any:
    """JSON from untrusted text: malformed, nested deeper than MAX_DEPTH (the parser's own recursion limit
    included) or holding an integer of thousands of digits is one DataError naming `where`."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise DataError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not valid JSON ({e.msg}: line {e.lineno} column {e.colno})") from None
    except UnicodeDecodeError:
        raise DataError(f"{where}: not valid JSON (not UTF-8 text)") from None
    except ValueError as e:  # an integer beyond Python's digit limit
        raise DataError(f"{where}: not valid JSON ({e})") from None
    opening = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
    if sum(map(text.count, opening)) >= MAX_DEPTH and too_deep(value):  # the count: a JSONL corpus's lines
        raise DataError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
    return value


def too_deep(value: Any) -> bool:
    """Whether `value` (parsed JSON or TOML) nests deeper than MAX_DEPTH levels; walked level by level."""
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [c for v in level if isinstance(v, (dict, list)) for c in (v.values() if isinstance(v, dict)
                                                                            else v)]
        if not level:
            return False
    return True


def check_record(value: Any, kind: str, where: str | Path) -> Any:
    """`value` (parsed JSON) against the schema of `kind`; one DataError line naming `where` and the field."""
    try:
        schema(kind).check(value, "")
    except RecordError as error:
        raise DataError(f"{where}: {error}") from None
    return value


def load_record(path: str | Path, kind: str, *, missing_ok: bool = False) -> Any:
    """The record of `kind` in the file `path`, checked against its schema. Missing: None with
    `missing_ok`, else a DataError; anything else wrong: one DataError line naming the file and the field."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise DataError(f"{path}: missing") from None
    return check_record(parse_json(data, path), kind, path)


def inside(directory: str | Path, name: str, *, write: bool = False) -> Path:
    """`directory / name` for a name read from a record, refused (DataError) unless it stays inside
    `directory`: a relative path of plain components (no `..`, not absolute), no component a symbolic link
    (a link in the middle could lead anywhere), and, where corpusprep deletes or writes (`write`), not the
    last one either. The one function by which a recorded name becomes a path."""
    directory = Path(directory)
    problem = name_problem(name) if isinstance(name, str) else "not a relative path inside the directory"
    if problem:
        shown = json.dumps(name) if isinstance(name, str) else _what(name)
        raise DataError(f"{directory}: {shown}: {problem}")
    path = directory
    parts = name.split("/")
    for i, part in enumerate(parts):
        path = path / part
        if (write or i < len(parts) - 1) and path.is_symlink():
            raise DataError(
                f"{path}: a symbolic link where a record of {directory} names a file or folder; corpusprep "
                "follows no link inside an output it reads, writes or deletes (move it away)"
            )
    return path


# ---------------------------------------------------------------------------------------------- the kinds

# What the schemas of many kinds share.
SHA256 = Str(pattern=r"[0-9a-f]{64}", what="a sha256 (64 hex digits)")
COUNT = Int()
SCALAR = Either(Null(), Bool(), Int(-MAX_INT - 1), Num(finite=False), Str())
FILE_ENTRY = Obj({"size": COUNT, "sha256": SHA256})
FILES = MapOf(FILE_ENTRY, key=Name())
NUMBER = Either(Int(-MAX_INT - 1), Num())
BY_REASON = MapOf(COUNT)

# kind -> the module that declares its schema and registers it (`register`) when imported: the package that
# writes the record. `schema` imports it the first time a record of the kind is checked.
PRODUCERS: dict[str, str] = {
    "artifact": "corpusprep.engine.schemas",
    "artifact_run": "corpusprep.engine.schemas",
    "task_marker": "corpusprep.engine.schemas",
    "shards_manifest": "corpusprep.shard.schemas",
    "mask_task": "corpusprep.shard.schemas",
    "shard_task": "corpusprep.shard.schemas",
    "pairs_stats": "corpusprep.pair.schemas",
    "read_task": "corpusprep.pair.schemas",
    "tokens_task": "corpusprep.pair.schemas",
    "pairs_task": "corpusprep.pair.schemas",
    "vocab_report": "corpusprep.tokenize.schemas",
    "tokenizer_config": "corpusprep.tokenize.schemas",
    "tokenizer_json": "corpusprep.tokenize.schemas",
    "sentences_record": "corpusprep.split.schemas",
    "checkpoint_config": "trainer.schemas",
    "trainer_state": "trainer.schemas",
    "hf_config": "trainer.schemas",
    "pipeline_run": "pipelines.schemas",
    "stage_started": "pipelines.schemas",
    "stage_done": "pipelines.schemas",
    "demo_stats": "pipelines.schemas",
    "safetensors_header": "corpusprep.engine.safetensors_file",
    "evaluation": "trainer.evaluate.schemas",
    "evaluate_run": "trainer.evaluate.schemas",
    "random_run": "trainer.evaluate.schemas",
    "curate_stats": "corpusprep.curate.schemas",
    "curate_removed": "corpusprep.curate.schemas",
    "curate_read_task": "corpusprep.curate.schemas",
}
SCHEMAS: dict[str, Schema] = {}  # kind -> schema, as its producer registered it


def register(module: str, schemas: dict[str, Schema]) -> None:
    """Add `schemas` ({kind: schema}) declared by `module` (its `__name__`), which PRODUCERS must name as
    the producer of each of those kinds: a kind has one schema, in one place."""
    for kind, declared in schemas.items():
        if PRODUCERS.get(kind) != module:
            raise ValueError(f"{module}: registers {kind!r}, which records.PRODUCERS does not give it")
        SCHEMAS[kind] = declared


def schema(kind: str) -> Schema:
    """The schema of `kind`, its producer's module imported on first use (KeyError: a kind of no producer)."""
    if kind not in SCHEMAS:
        importlib.import_module(PRODUCERS[kind])
    return SCHEMAS[kind]


__all__ = ["PRODUCERS", "RecordError", "check_record", "inside", "load_record", "parse_json", "read_bytes",
           "register", "schema", "too_deep"]
