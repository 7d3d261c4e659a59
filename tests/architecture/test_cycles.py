"""A ratchet: no function-level import hides an import circle. An internal import inside a function is fine
for start-up (the CLI loads no numpy for `--help`) but not to break a circle: if the module it imports
already reaches the importing module through module-level imports, the two belong in another order (move
the code to the module it belongs to). Found by `ast` over corpusprep/, trainer/ and pipelines/, without
importing them. ALLOWED lists what is left to move, by its owner; delete a row when it is gone, never add."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("corpusprep", "trainer", "pipelines")
ALLOWED: set[str] = set()


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for scope in SCANNED:
        for path in sorted((root / scope).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, here: str, modules: dict[str, Path]) -> set[str]:
    """The internal modules an import statement runs (every package on the way, as Python does), but for
    the packages that hold `here`, which are loaded before it."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = here.split(".")
            keep = len(package) - node.level + (modules[here].name == "__init__.py")
            base = ".".join(package[:keep] + ([base] if base else []))
        names = [base, *(f"{base}.{a.name}" for a in node.names)]
    parents = {".".join(here.split(".")[:i]) for i in range(1, here.count(".") + 1)}
    out = set()
    for name in names:
        parts = name.split(".")
        out |= {m for i in range(1, len(parts) + 1) if (m := ".".join(parts[:i])) in modules}
    return out - parents - {here}


def _imports(root: Path) -> tuple[dict[str, set[str]], list[tuple[str, str, set[str]]]]:
    """(module -> modules it imports at module level, [(file:function, importer, modules) of every
    function-level internal import])."""
    modules = _modules(root)
    top: dict[str, set[str]] = defaultdict(set)
    local = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in inner:
                        inner.add(id(node))
                        where = f"{path.relative_to(root).as_posix()}:{fn.name}"
                        local.append((where, module, _imported(node, module, modules)))
        for node in ast.walk(tree):
            future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in inner and not future:
                top[module] |= _imported(node, module, modules)
    return top, local


def _reaches(top: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, stack = {start}, [start]
    while stack:
        module = stack.pop()
        if module == goal:
            return True
        stack += [m for m in top[module] if m not in seen]
        seen |= top[module]
    return False


def hidden_circles(root: Path = ROOT) -> set[str]:
    """file:function of each function-level import that sits on an import circle once every import is
    made at module level: the module it imports reaches the importer back."""
    top, local = _imports(root)
    hoisted = defaultdict(set, {module: set(targets) for module, targets in top.items()})
    for _, module, targets in local:
        hoisted[module] |= targets
    return {where for where, module, targets in local if any(_reaches(hoisted, t, module) for t in targets)}


def test_no_function_level_import_hides_an_import_circle():
    found = hidden_circles()
    assert not found - ALLOWED, f"a function-level import hides an import circle: {sorted(found - ALLOWED)}"
    assert not ALLOWED - found, f"gone now: delete their ALLOWED rows: {sorted(ALLOWED - found)}"


def test_the_scan_finds_a_hidden_circle(tmp_path):
    """The scanner itself: modules importing each other, one or both of them inside a function."""
    package = tmp_path / "corpusprep"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from corpusprep.b import g\n\n\ndef f():\n    return g()\n")
    (package / "b.py").write_text("def g():\n    from corpusprep.a import f\n\n    return f\n")
    (package / "c.py").write_text("def h():\n    from corpusprep.b import g\n\n    return g\n")
    (package / "d.py").write_text("def i():\n    from corpusprep.e import j\n\n    return j\n")
    (package / "e.py").write_text("def j():\n    from corpusprep import d\n\n    return d\n")
    assert hidden_circles(tmp_path) == {"corpusprep/b.py:g", "corpusprep/d.py:i", "corpusprep/e.py:j"}
