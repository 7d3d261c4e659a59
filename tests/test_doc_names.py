"""The design docs name only code that exists: every code name in backticks in docs/DESIGN.md and
docs/extension.md is looked up in the source (by `ast`, nothing imported), so a rename or a move that
leaves a page behind fails here, naming the page, the line and the span.

What counts as a code name (any other span is prose: a flag, a record field, a shell command, a value):
- a path of the repository: a span ending in `.py` (with `::test_x` or `:function` after it, checked too)
  or starting with one of its top-level folders (`corpusprep/`, `trainer/`, `tests/`, `docs/`, ...). It
  must exist, from the repository root, from `corpusprep/` (`engine/outputs.py`), or, for a bare
  `data.py`, anywhere in the code;
- a dotted name whose first part is one of our packages or modules (`corpusprep.engine.records`,
  `records.inside`, `engine.outputs.OUTPUT_KINDS`) or classes (`Trainer.evaluate`): the module, then each name
  defined in it (a module's own definitions: a name it merely imports does not count, but a package's
  `__init__` re-exports do), then a member of the class. A module named by its last parts (`records`,
  `engine.outputs`) may be any module whose path ends so. A settings key (`data.chunk_rows`,
  `schedule.budget`) is a field of the matching `*Config` class;
- a call, `name(...)` or `a.b(...)`: the name before the parenthesis, as above or as a definition;
- a bare identifier that reads as code by its form: CamelCase (`ShardStream`), UPPER_CASE of four letters
  or more or with an underscore (`OUTPUT_KINDS`, `PAIRS_SCHEMA`), or snake_case with an underscore
  (`resume_conflicts`). It must be defined somewhere in the code (tests and benches included), or be a
  string the code spells (a record kind, a column, a setting: `trainer_state`, `max_seq_length`), or a
  name the code imports from a library (`LambdaLR`), or a Python builtin.
Spans holding a placeholder in capitals (PLACEHOLDERS: `corpusprep/objectives/NAME.py`), a glob, brackets
or spaces are prose. A third-party name is written qualified (`transformers.AutoTokenizer`), which this
test leaves alone: its first part is none of ours."""

from __future__ import annotations

import ast
import builtins
import functools
import re
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = ("docs/DESIGN.md", "docs/extension.md")
CODE = ("corpusprep", "trainer", "pipelines", "tests", "bench")
PACKAGES = ("corpusprep", "trainer", "pipelines")  # what a dotted name may start from
TOP = ("corpusprep/", "trainer/", "pipelines/", "tests/", "bench/", "docs/", "scripts/", ".ci/")
PLACEHOLDERS = {"NAME", "KIND", "DIR", "RUN_DIR", "PAIRS_DIR", "SHARDS_DIR", "VOCAB_DIR", "EVAL_DIR", "OUT",
                "OUT_DIR", "POINT", "PHASE", "TASK", "N", "I", "R", "S", "T", "L", "H"}
DATA_FILES = (".json", ".jsonl", ".txt", ".md", ".toml", ".safetensors", ".parquet", ".png", ".lock", ".xz")
SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
CALL = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(.*\)")
IDENT = re.compile(r"[A-Za-z_]\w*")


class Index:
    """What the code defines, read with `ast`: modules, their own names, classes and their members."""

    def __init__(self, root: Path):
        self.root = root
        self.modules: dict[str, set[str]] = {}  # dotted module -> names defined (an __init__: imported too)
        self.classes: dict[str, set[str]] = defaultdict(set)  # class name -> members, over every module
        self.defined: set[str] = set()  # every name defined anywhere
        self.strings: set[str] = set()  # every identifier-like string constant
        self.external: set[str] = set()  # names imported from outside the code
        self.used: set[str] = set()  # attributes, parameters and keywords the code uses (`relative_to`)
        self.files = {p.name for top in CODE for p in (root / top).rglob("*.py")}
        for top in CODE:
            for path in sorted((root / top).rglob("*.py")):
                if path != Path(__file__).resolve():  # its examples of stale names are no definitions
                    self._read(path)

    def _read(self, path: Path) -> None:
        parts = list(path.relative_to(self.root).with_suffix("").parts)
        package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if package else parts)
        names = self.modules.setdefault(module, set())
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            names |= _defined(node)
            if isinstance(node, ast.ImportFrom) and package:  # a package's names: what it re-exports
                names |= {a.asname or a.name for a in node.names}
            if isinstance(node, ast.Assign) and _defined(node) == {"__all__"}:  # a module's re-exports
                names |= {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] |= {n for child in node.body for n in _defined(child)}
                self.classes[node.name] |= {t.attr for t in ast.walk(node) if isinstance(t, ast.Attribute)
                                            and isinstance(t.value, ast.Name) and t.value.id == "self"
                                            and isinstance(t.ctx, ast.Store)}
            self.defined |= _defined(node)
            if isinstance(node, (ast.Attribute, ast.arg, ast.keyword)):
                self.used.add(node.attr if isinstance(node, ast.Attribute) else node.arg)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and IDENT.fullmatch(node.value):
                self.strings.add(node.value)
            if isinstance(node, ast.ImportFrom) and node.module and not node.level \
                    and node.module.split(".")[0] not in PACKAGES + ("tests", "bench"):
                self.external |= {a.asname or a.name for a in node.names}
        self.defined |= set(self.classes)

    def attribute(self, names: set[str], rest: list[str]) -> bool:
        """`rest` (a.b.c) names a definition among `names`, then members of classes."""
        if not rest:
            return True
        if rest[0] not in names:
            return False
        return len(rest) == 1 or (rest[0] in self.classes and self.attribute(self.classes[rest[0]], rest[1:]))

    def dotted(self, parts: list[str]) -> bool | None:
        """Whether a dotted name resolves; None when it is not ours to check (a library's, a record's)."""
        ours = False
        for cut in range(len(parts), 0, -1):
            suffix = ".".join(parts[:cut])
            found = [m for m in self.modules if m == suffix or m.endswith("." + suffix)]
            ours = ours or bool(found)
            if any(self.attribute(self.modules[m], parts[cut:]) for m in found):
                return True
        if parts[0] in self.classes:
            return self.attribute(self.classes[parts[0]], parts[1:])
        config = parts[0].capitalize() + "Config"  # a settings key: data.chunk_rows is DataConfig's field
        if len(parts) == 2 and config in self.classes:
            return parts[1] in self.classes[config]
        return False if ours else None

    def path(self, text: str) -> bool:
        """A repository path exists (and the test or function after `::` or `.py:` is defined in it)."""
        file, _, inner = re.sub(r"\[[^\]]*\]$", "", text).partition("::")
        if not inner and ".py:" in file:
            file, _, inner = file.partition(".py:")
            file += ".py"
        found = next((c for c in (self.root / file, self.root / "corpusprep" / file) if c.exists()), None)
        if found is None:
            return "/" not in file and file in self.files
        tree = ast.parse(found.read_text(encoding="utf-8")) if inner else None
        return not inner or inner in {n for node in ast.walk(tree) for n in _defined(node)}


def _defined(node: ast.AST) -> set[str]:
    """The names a statement defines: a function, a class, an assignment's or annotation's targets."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, (ast.AnnAssign, ast.AugAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


@functools.cache
def index() -> Index:
    return Index(REPO)


def problem(span: str, code: Index) -> str | None:
    """Why `span` names nothing in the code; None when it does, or is not a code name."""
    words = set(re.findall(r"[A-Za-z_]\w*", span))
    if (words | {part for word in words for part in word.split("_")}) & PLACEHOLDERS:
        return None
    if span.startswith(("-", "$", ".")) or any(c in span for c in "*<>") or span.endswith(DATA_FILES):
        return None
    if " " not in span and (span.endswith(".py") or ".py:" in span or span.startswith(TOP)):
        return None if code.path(span) else "no such file (or no such test or function in it)"
    call = CALL.fullmatch(span)
    name = call.group(1) if call else span
    if DOTTED.fullmatch(name):
        return "not defined where it says" if code.dotted(name.split(".")) is False else None
    if not IDENT.fullmatch(name):
        return None
    looks_like_code = call or re.fullmatch(r"[A-Z][a-z0-9]+[A-Z]\w*", name) or (
        name.isupper() and (len(name) >= 4 or "_" in name)) or ("_" in name.strip("_") and name.islower())
    short_modules = {m.rsplit(".", 1)[-1] for m in code.modules}
    known = (name in code.defined or name in code.strings or name in code.external or name in code.used
             or name in dir(builtins) or name in short_modules)
    return "defined nowhere in the code" if looks_like_code and not known else None


def stale_names(text: str, page: str, code: Index) -> list[str]:
    found = []
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for number, line in enumerate(prose.splitlines(), 1):
        for span in SPAN.findall(line):
            if why := problem(span, code):
                found.append(f"{page}:{number}: `{span}`: {why}")
    return found


@pytest.mark.parametrize("page", PAGES)
def test_every_code_name_in_the_design_docs_exists(page):
    found = stale_names((REPO / page).read_text(), page, index())
    assert not found, "\n".join(found)


def test_the_check_sees_stale_names():
    """The check itself, on names this code base once had (and each kind of name it does have)."""
    code = index()
    stale = ["check_positions", "PAIRS_SCHEMA", "trainer.checkpoint.data_position", "checkpoint.check_state",
             "records.safetensors_header", "trainer/nothing.py", "tests/test_docs.py::test_gone",
             "Trainer.no_such_method", "data.no_such_setting", "no_such_function(x)"]
    assert [s for s in stale if problem(s, code) is None] == []
    fine = ["pairs_schema()", "trainer.checkpoint_checks.data_position", "records.inside", "Trainer.evaluate",
            "engine/outputs.py", "tests/test_docs.py::test_anchors_are_githubs", "data.chunk_rows",
            "trainer_state", "ShardStream", "OUTPUT_KINDS", "corpusprep/objectives/NAME.py", "--overwrite",
            "transformers.AutoTokenizer", "LambdaLR", "Artifact.__enter__", "rng_for(seed, partition)"]
    assert {s: problem(s, code) for s in fine} == dict.fromkeys(fine)
