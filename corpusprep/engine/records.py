"""The trust boundary: every record corpusprep reads back from disk is parsed here, against its schema.

Nothing on disk that this process did not just write is trusted: a manifest, a task marker, a run record,
stats, a checkpoint's metadata or a Hugging Face config may have been edited, truncated, copied from
somewhere else or written to attack. So every JSON record is read by one loader, `load_record(path, kind)`,
which checks it against the schema of its kind (`SCHEMAS`: types, ranges, required keys; extra keys are
tolerated, for records of a newer version, and never used) and raises one `DataError` line naming the file
and the field:

    runs/x/vocab/artifact.json: files["../x"]: not a relative path inside the directory

and every name a record holds is turned into a path by one function, `inside(directory, name)`: a relative
path of plain components that stays inside its directory, no component a symbolic link (and, where
corpusprep deletes or writes, not the last one either). Checkpoints hold no pickle (trainer/checkpoint.py:
tensors in safetensors, the rest in JSON read here). `corpusprep validate` uses the same loaders, so it never
calls a damaged record valid.

The schema language is a handful of classes (`Int`, `Num`, `Str`, `Bool`, `Null`, `Either`, `ListOf`,
`MapOf`, `Obj`, `Name`, `Rule`): small enough to read in one screen, and no dependency (jsonschema is not
installed at run time, and its error messages do not name a field the way a user reads it).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.errors import DataError
from corpusprep.mask import strategies
from corpusprep.objectives import REGISTRY as OBJECTIVES

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
                 extra: bool = True, rest: Schema | None = None):  # fmt: skip
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
                                                                            else v)]  # fmt: skip
        if not level:
            return False
    return True


def check_record(value: Any, kind: str, where: str | Path) -> Any:
    """`value` (parsed JSON) against the schema of `kind`; one DataError line naming `where` and the field."""
    try:
        SCHEMAS[kind].check(value, "")
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


# ---------------------------------------------------------------------------------------------- checkpoints

# A checkpoint's files: trainer/checkpoint.py writes them, `corpusprep validate` reads them without torch.
CHECKPOINT_WEIGHTS = "weights.safetensors"  # the model's state dict
CHECKPOINT_TENSORS = "trainer.safetensors"  # the optimizer's state tensors, the RNG states
CHECKPOINT_STATE = "trainer.json"  # everything else of a training run's state (kind "trainer_state")
CHECKPOINT_CONFIG = "config.json"  # kind "checkpoint_config", with every other file's size and sha256
PICKLED_CHECKPOINT = ("model.pt", "optimizer.pt", "scheduler.pt", "trainer.pt")  # the format before: refused

# ---------------------------------------------------------------------------------------------- safetensors

# bytes per element of each safetensors dtype
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")  # safetensors' names of the dtypes a model's weights may have
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
               "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}  # fmt: skip
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
                            "short)")  # fmt: skip
        header = check_record(parse_json(f.read(length), path), "safetensors_header", path)
    spans = sorted((entry["data_offsets"], name) for name, entry in header.items() if name != "__metadata__")
    end = 0
    for (begin, stop), name in spans:
        entry = header[name]
        count = math.prod(entry["shape"])
        if begin != end or stop - begin != count * DTYPE_BYTES[entry["dtype"]]:
            raise DataError(f"{path}: {json.dumps(name)}.data_offsets: [{begin}, {stop}] is not the "
                            f"{count} x {entry['dtype']} after byte {end}")  # fmt: skip
        end = stop
    if 8 + length + end != size:
        raise DataError(f"{path}: {size:,} bytes, its header describes {8 + length + end:,} (cut short or "
                        "padded)")  # fmt: skip
    return {n: (e["dtype"], tuple(e["shape"])) for n, e in header.items() if n != "__metadata__"}


# ---------------------------------------------------------------------------------------------- the kinds

SHA256 = Str(pattern=r"[0-9a-f]{64}", what="a sha256 (64 hex digits)")
COUNT = Int()
SCALAR = Either(Null(), Bool(), Int(-MAX_INT - 1), Num(finite=False), Str())
FILE_ENTRY = Obj({"size": COUNT, "sha256": SHA256})
FILES = MapOf(FILE_ENTRY, key=Name())
TASK_ID = Str(pattern=r"[A-Za-z0-9][A-Za-z0-9._-]*", what="a task id")
# A task's stats: counts, nested by split or reason, lists of examples; checked by shape here (the stage that
# merges them sums numbers, merges objects and joins lists), and where they steer work, by the stage's own
# schema below.
STATS_VALUE: Schema = Either(Int(-MAX_INT - 1), Num(), Bool(), Null(), Str(), Lazy(lambda: STATS_LIST),
                             Lazy(lambda: STATS))  # fmt: skip
STATS_LIST = ListOf(STATS_VALUE)
STATS = MapOf(STATS_VALUE)
TASK = Obj({"stats": STATS, "outputs": FILES})

# What the tasks of each stage return, where a marker's record is reused (engine.executor, `stats_kind`):
# the values that steer work typed, the counts numbers (merge_stats adds them), nothing else.
NUMBER = Either(Int(-MAX_INT - 1), Num())
BY_REASON = MapOf(COUNT)
# a split's counts: numbers, but for skips by reason and the files' NotNext - IsNext balances
SPLIT_COUNTS = Obj({}, {"skipped": BY_REASON, "documents_skipped": BY_REASON,
                        "file_imbalance": ListOf(Int(-MAX_INT - 1))}, rest=NUMBER)  # fmt: skip
READ_STATS = Obj({"skipped": BY_REASON, "skipped_files": BY_REASON}, {"examples": MapOf(ListOf(Str()))},
                 rest=STATS_VALUE)  # corpusprep.read.ReadStats.to_dict()  # fmt: skip
READ_TASK = Obj({"chunks": Int(0, 2**31), "documents": MapOf(COUNT), "read": READ_STATS}, {"chars": COUNT})
TOKENS_TASK = Obj({"partition_documents": MapOf(COUNT)}, rest=SPLIT_COUNTS)
PAIRS_TASK = MapOf(SPLIT_COUNTS)
MASK_TASK = Obj({"examples": COUNT, "groups": ListOf(ListOf(ListOf(Int(-MAX_INT - 1))))}, rest=NUMBER)
SHARD_TASK = Obj({"path": Name(), "rows": COUNT}, rest=NUMBER)

KIND = Str(pattern=r"[a-z][a-z0-9_-]*", what="an output kind")
ARTIFACT = Obj(
    {"kind": KIND, "format_version": Int(1), "fingerprint": SHA256, "identity": MapOf(Anything()),
     "files": FILES},
    {"tasks": MapOf(TASK, key=TASK_ID), "summary": MapOf(SCALAR)},
)  # fmt: skip
ARTIFACT_RUN = Obj({"fingerprint": SHA256, "identity": MapOf(Anything())}, {"foreign": ListOf(Name())})

OBJECTIVE = Str(OBJECTIVES)  # the registry itself: an objective registered later is known too
MASK_STRATEGY = Str(strategies.REGISTRY)  # the registry itself: a strategy registered later is known too
SEQ_LENGTH = Int(1, 2**16)  # token positions are uint16 in the shards


# a vocab's special tokens (corpusprep.tokenize re-exports them), named by a shards manifest's special_ids
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _special_ids() -> Schema:
    return Obj({t: Int(0, 2**32) for t in SPECIAL_TOKENS})


def _special_ids_fit(vocab: dict) -> tuple[str, str] | None:
    for token, i in vocab["special_ids"].items():
        if i >= vocab["size"]:
            return f"special_ids[{json.dumps(token)}]", f"{i}, beyond the vocab's {vocab['size']} tokens"
    return None


def _one_strategy(options: dict) -> tuple[str, str] | None:
    """`whole_word_mask` (older manifests' name of the whole-word strategy) agrees with `mask_strategy`."""
    strategy = options.get("mask_strategy")
    if options.get("whole_word_mask") and strategy not in (None, strategies.WHOLE_WORD_ALIAS):
        return "whole_word_mask", f"true (the whole-word strategy) contradicts mask_strategy {strategy!r}"
    return None


PAIRS_SPLIT = Obj({"pairs": COUNT}, {"rows": COUNT, "documents": COUNT})
PAIRS_STATS = Obj(
    {},
    {
        "pairs": COUNT,
        "splits": MapOf(PAIRS_SPLIT),
        "objective": OBJECTIVE,
        "options": Obj({}, {"objective": OBJECTIVE, "max_seq_length": SEQ_LENGTH, "language": Str(),
                            "dupe_factor": Int(1)}),  # fmt: skip
        "vocab": Obj({}, {"sha256": SHA256, "size": Int(1)}),
        "max_seq_length": SEQ_LENGTH,
    },
)
SHARD = Obj({"path": Name(), "rows": COUNT, "bytes": COUNT, "sha256": SHA256})
SHARDS_MANIFEST = Obj(
    {
        "schema_version": Int(1),
        "max_seq_length": SEQ_LENGTH,
        "token_dtype": Str(("uint16", "uint32")),
        "options": Rule(Obj({"masked_lm_prob": Num(0, 1), "max_predictions_per_seq": Int(0, 2**16)},
                            {"mask_strategy": MASK_STRATEGY, "whole_word_mask": Bool(),
                             "dupe_masks": Int(1)}),
                        _one_strategy),
        "vocab": Rule(Obj({"path": Str(), "sha256": SHA256, "size": Int(1, 2**32),
                           "special_ids": Lazy(_special_ids)}),
                      _special_ids_fit),
        "splits": MapOf(Obj({"shards": ListOf(SHARD)}, {"examples": COUNT})),
        "totals": MapOf(Int(-MAX_INT - 1)),
    },
    {"objective": Opt(OBJECTIVE), "word_segmenter": Opt(Str()), "pairs_stats": PAIRS_STATS,
     "fingerprint": Str(), "seed": Int(-MAX_INT - 1)},
)  # fmt: skip
VOCAB_REPORT = Obj({
    "vocab_size": Int(1),
    "documents": Obj({"read": COUNT, "used": COUNT, "skipped": MapOf(COUNT)}),
    "bytes_read": COUNT,
})  # fmt: skip
SENTENCES_RECORD = Obj(
    {"identity": MapOf(Anything()), "output": ListOf(COUNT, 2, 2), "report": MapOf(Anything())}
)

# Checkpoints (trainer/checkpoint.py). The model's fields are checked by trainer.config.check_model.
CHECKPOINT_RECORD = Obj(
    {"model": MapOf(SCALAR)},
    {
        "format": Int(2, 2),
        "train": Obj({}, {"data": Obj({}, {"shards": Str()})}),
        "vocab": Obj({}, {"sha256": Opt(SHA256), "size": Opt(Int(1)), "path": Name()}),
        "shards": MapOf(SCALAR),
        "files": FILES,
        "source": Obj({}, {"huggingface": Str(), "initialized_fresh": ListOf(Str())}),
    },
)
TENSOR = Obj({"tensor": Str()}, extra=False)  # a reference to a tensor of the checkpoint's safetensors file
STATE_VALUE = Either(SCALAR, TENSOR, ListOf(SCALAR))  # an optimizer's or a schedule's state entry
DATA_POSITION = Obj({"epoch": COUNT, "examples": COUNT}, extra=False)  # a place in the global order
LEGACY_POSITION = Obj({"batches": COUNT, "rows": ListOf(COUNT, 1024)}, extra=False)  # per rank and worker
TRAINER = Obj(
    {
        "format": Int(2, 2),
        "step": COUNT,
        "rng": ListOf(Obj({"cpu": TENSOR, "cuda": Opt(TENSOR)}, extra=False), 2**16, 1),
        "optimizer": Obj({"state": MapOf(MapOf(STATE_VALUE), key=Str(pattern=r"\d{1,9}", what="an index")),
                          "param_groups": ListOf(MapOf(STATE_VALUE), 1024, 1)}, extra=False),
        "scheduler": MapOf(STATE_VALUE),
        "last_metrics": MapOf(Num(finite=False)),
    },
    {
        "data": DATA_POSITION,
        "positions": ListOf(LEGACY_POSITION, 2**16, 1),  # an earlier trainer's: trainer.checkpoint reads it
        "elapsed": Num(0),  # seconds of training so far (a budgeted run's clock); absent before budgets
    },
    extra=False,
)
TRAINER_STATE = Rule(TRAINER, lambda r: None if {"data", "positions"} & set(r) else ("data", "missing"))

# A Hugging Face BERT config.json (trainer.export.bert_config_from_hf; trainer.import_hf reads it too).
DIM = Int(1, 2**31 - 1)
HF_CONFIG = Obj(
    {"vocab_size": DIM, "hidden_size": DIM, "num_hidden_layers": DIM, "num_attention_heads": DIM,
     "intermediate_size": DIM},
    {
        "max_position_embeddings": DIM, "type_vocab_size": DIM,
        "hidden_dropout_prob": Num(0, 1), "attention_probs_dropout_prob": Num(0, 1),
        "layer_norm_eps": Num(0, 1), "initializer_range": Num(0, 1e3),
        "model_type": Str(), "hidden_act": Str(), "position_embedding_type": Str(),
        "corpusprep_objective": Opt(OBJECTIVE), "pad_token_id": Opt(Int()), "architectures": ListOf(Str()),
    },
)  # fmt: skip

# A Hugging Face tokenizer's files, where corpusprep reads a setting from them.
TOKENIZER_CONFIG = Obj({}, {"do_lower_case": Bool()})
TOKENIZER_JSON = Obj({}, {"normalizer": Opt(Obj({}, {"lowercase": Bool()}))})

# Pipeline runs (pipelines/runner.py).
PIPELINE_RUN = Obj({"pipeline": Str()}, {"source": Str()})
STAGE_STARTED = Obj({"fingerprint": Str()})
STAGE_DONE = Obj({
    "stage": Str(), "kind": Str(), "phase": Opt(Str()), "fingerprint": Str(), "settings": MapOf(Anything()),
    "inputs": MapOf(Str()), "output": Name(), "outputs": MapOf(COUNT, key=Name()),
    "counts": MapOf(Anything()),
    "unit": Opt(Str()), "seconds": Num(0), "engine": Str(), "finished": Str(),
})  # fmt: skip
DEMO_STATS = Obj({k: COUNT for k in ("modules", "docstrings", "documents", "bytes")}, {"dropped": Anything()})

# trainer.evaluate (trainer/evaluate/compare.py): one fine-tuning run's record, and the whole evaluation.
SEED = Int(-MAX_INT - 1)
EVALUATE_RUN = Obj({
    "init": Str(("pretrained", "random")), "seed": SEED, "threads": Int(1), "seconds": Num(0),
    "scores": MapOf(Obj({"accuracy": Num(0, 1), "n": Int(1)}, {"truncated": COUNT})),
})  # fmt: skip
SEED_SCORES = Obj({"scores": ListOf(Num()), "mean": Num(), "std": Opt(Num(0))},
                  {"interval": ListOf(Num(), 2, 2)})  # fmt: skip
EVALUATION = Rule(
    Obj(
        {
            "model": Obj({"source": Str(), "description": Str(),
                          "cost": Obj({"known": Bool()}, {"steps": COUNT, "examples": Opt(COUNT),
                                                          "tokens": Opt(COUNT), "seconds": Opt(Num(0)),
                                                          "note": Str()})}),
            "task": Str(), "metric": Str(), "unit": Str(), "device": Str(), "baseline_name": Str(),
            "seeds": ListOf(SEED, min_len=1),
            "settings": Obj({"epochs": Num(0), "batch_size": Int(1), "lr": Num(0), "warmup": Num(0, 1),
                             "weight_decay": Num(0), "max_length": Int(1)}),
            "splits": MapOf(Obj({"pretrained": SEED_SCORES, "random": SEED_SCORES, "gain": SEED_SCORES,
                                 "verdict": Str(), "outcome": Str(("helps", "hurts", "no_gain", "unknown")),
                                 "baseline": Num(0, 1), "n": Int(1), "warnings": ListOf(Str())})),
            "runs": ListOf(EVALUATE_RUN), "seconds": Num(0), "wall_seconds": Num(0), "runs_at_once": Int(1),
            "load_average": Num(0), "cpus": Int(1),
        },
        {"skipped": MapOf(Obj({"counts": MapOf(COUNT), "examples": ListOf(Str(), min_len=1)})),
         "invalid_utf8": MapOf(COUNT)},
    ),
    lambda r: None if "dev" in r["splits"] else ("splits", "no dev split"),
)  # fmt: skip

TENSOR_ENTRY = Obj({"dtype": Str(tuple(DTYPE_BYTES)), "shape": ListOf(Int(0, 2**40), 16),
                    "data_offsets": ListOf(COUNT, 2, 2)}, extra=False)  # fmt: skip
SAFETENSORS_HEADER = Rule(
    MapOf(Either(TENSOR_ENTRY, MapOf(Str()))),  # MapOf(Str()): "__metadata__"
    lambda h: next(((json.dumps(n), "not a tensor's entry") for n, e in h.items()
                    if (n == "__metadata__") == ("dtype" in e)), None),
)  # fmt: skip

SCHEMAS: dict[str, Schema] = {
    "artifact": ARTIFACT,  # DIR/artifact.json (engine.artifact)
    "artifact_run": ARTIFACT_RUN,  # DIR/.work/run.json
    "task_marker": TASK,  # DIR/.work/markers/TASK.done.json (engine.executor)
    "shards_manifest": SHARDS_MANIFEST,  # SHARDS_DIR/manifest.json
    "pairs_stats": PAIRS_STATS,  # PAIRS_DIR/stats.json
    "vocab_report": VOCAB_REPORT,  # VOCAB_DIR/vocab_report.json
    "sentences_record": SENTENCES_RECORD,  # .NAME.done.json beside a `corpusprep sentences` output
    "checkpoint_config": CHECKPOINT_RECORD,  # step-N/config.json, an import's config.json
    "trainer_state": TRAINER_STATE,  # step-N/trainer.json
    "hf_config": HF_CONFIG,  # a Hugging Face BERT's config.json
    "tokenizer_config": TOKENIZER_CONFIG,  # tokenizer_config.json (casing)
    "tokenizer_json": TOKENIZER_JSON,  # tokenizer.json (casing of a vocab without tokenizer_config.json)
    "pipeline_run": PIPELINE_RUN,  # RUN_DIR/run.json
    "stage_started": STAGE_STARTED,  # RUN_DIR/stages/NAME.started.json
    "stage_done": STAGE_DONE,  # RUN_DIR/stages/NAME.done.json
    "demo_stats": DEMO_STATS,  # RUN_DIR/corpus/demo_stats.json
    "safetensors_header": SAFETENSORS_HEADER,  # the JSON header of a .safetensors file
    "evaluation": EVALUATION,  # EVAL_DIR/evaluation.json (trainer.evaluate)
    # the stats in a task's marker, by the stage that reuses them (Executor.run, `stats_kind`)
    "read_task": READ_TASK,  # build-pairs: reading the documents into chunks
    "tokens_task": TOKENS_TASK,  # build-pairs: a chunk split and tokenized
    "pairs_task": PAIRS_TASK,  # build-pairs: a partition's dupe pass
    "mask_task": MASK_TASK,  # shard: a pairs file masked and dealt to spill files
    "shard_task": SHARD_TASK,  # shard: a shard written
    "evaluate_run": EVALUATE_RUN,  # trainer.evaluate: one fine-tuning run (also EVAL_DIR/runs/*.json)
    # corpusprep curate's, defined beside it (corpusprep/curate/schemas.py), imported when one is checked
    **{kind: Lazy(lambda kind=kind: importlib.import_module("corpusprep.curate.schemas").SCHEMAS[kind])
       for kind in ("curate_stats", "curate_removed", "curate_read_task")},
}

__all__ = ["SCHEMAS", "RecordError", "check_record", "inside", "load_record", "parse_json", "read_bytes",
           "safetensors_header", "too_deep"]
