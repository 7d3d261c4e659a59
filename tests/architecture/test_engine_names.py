"""No code outside the executor package decides by an engine's name or passes engine settings down: a stage
driver, a command or the pipeline runner receives an `Executor` object (corpusprep.engine.executor). An `ast`
scan of corpusprep/, trainer/ and pipelines/ finds, outside ALLOWED:
- a comparison (==, !=, in, not in), a `match` case or a dispatch dict keyed by an engine name ("local", ...);
- a parameter, a dataclass field or a keyword argument named `engine` or like an engine setting
  (`ray_address`): the settings live in `ExecutorOptions` and reach an executor, nothing else.
"""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from corpusprep.engine.executor import ENGINES, ExecutorOptions

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("corpusprep", "trainer", "pipelines")
ALLOWED = ("corpusprep/engine/executor/",)  # the engines, their table and ExecutorOptions
NAMES = frozenset(ENGINES)
# `workers` stays a plain number for local-only uses (fine-tuning runs at once, a pool's size)
SETTINGS = frozenset({"engine"} | {f.name for f in fields(ExecutorOptions)} - {"workers"})


def _names_in(node: ast.AST) -> set[str]:
    """Engine names among the string constants of an expression (a tuple or set of them included)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return {i.value for i in items if isinstance(i, ast.Constant) and i.value in NAMES}


def findings(source: str, where: str) -> list[str]:
    """"WHERE:LINE: what" for each place in `source` that knows an engine by name."""
    found = []
    for node in ast.walk(ast.parse(source, filename=where)):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Compare) and any(map(_names_in, [node.left, *node.comparators])):
            found.append(f"{line}: compares with an engine name")
        elif isinstance(node, ast.match_case) and _names_in(getattr(node.pattern, "value", node.pattern)):
            found.append(f"{line}: a match case on an engine name")
        elif isinstance(node, ast.Dict) and len({k.value for k in node.keys if isinstance(k, ast.Constant)}
                                                & NAMES) >= 2:
            found.append(f"{line}: a table keyed by engine names")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            found += [f"{line}: parameter {a.arg!r}" for a in every if a is not None and a.arg in SETTINGS]
        elif isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) in SETTINGS:
            found.append(f"{line}: field {node.target.id!r}")
        elif isinstance(node, ast.keyword) and node.arg in SETTINGS:
            found.append(f"{where}:{node.value.lineno}: keyword argument {node.arg!r}")
    return found


def scanned_files() -> list[Path]:
    return [p for top in SCANNED for p in sorted((ROOT / top).rglob("*.py"))
            if not p.relative_to(ROOT).as_posix().startswith(ALLOWED)]


def test_the_scan_sees_what_it_looks_for():
    """The scanner itself: each kind of finding in a sample (else a zero below would prove nothing)."""
    sample = (
        "def build(x, engine='local', ray_address=None):\n"
        "    if engine != 'ray' or engine in ('local', 'ray'):\n"
        "        run(x, engine=engine)\n"
        "    match engine:\n"
        "        case 'ray':\n"
        "            pass\n"
        "    return {'local': 1, 'ray': 2}\n"
        "class Context:\n"
        "    engine: str = 'local'\n"
    )
    kinds = sorted({f.split(": ", 1)[1] for f in findings(sample, "sample.py")})
    assert kinds == ["a match case on an engine name", "a table keyed by engine names",
                     "compares with an engine name", "field 'engine'", "keyword argument 'engine'",
                     "parameter 'engine'", "parameter 'ray_address'"]


def test_no_code_outside_the_executor_package_knows_an_engine_by_name():
    files = scanned_files()
    assert len(files) > 50  # the whole code base was scanned
    found = [f for path in files
             for f in findings(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert found == [], "\n".join(found)
