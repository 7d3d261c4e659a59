"""A ratchet: no function (or method) outside tests/ and bench/ is longer than LIMIT lines, its decorators
and docstring included, counted by `ast`. ALLOWED lists the longer ones still to be split, with their
length today; shorten one and lower (or delete) its row, never raise one or add a row."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("corpusprep", "trainer", "pipelines")
LIMIT = 60
ALLOWED: dict[str, int] = {}


def function_lengths(path: Path) -> dict[str, int]:
    """`Class.method` or `function` -> lines from its first decorator to its last line."""
    lengths: dict[str, int] = {}
    stack: list[tuple[ast.AST, str]] = [(ast.parse(path.read_text()), "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    lengths[name] = child.end_lineno - first + 1
                stack.append((child, name + "."))
            else:
                stack.append((child, prefix))
    return lengths


def test_no_function_grows_past_the_limit():
    found = {}
    for scope in SCANNED:
        for path in sorted((ROOT / scope).rglob("*.py")):
            for name, length in function_lengths(path).items():
                found[f"{path.relative_to(ROOT).as_posix()}:{name}"] = length
    over = {key: n for key, n in found.items() if n > ALLOWED.get(key, LIMIT)}
    assert not over, f"longer than allowed ({LIMIT} lines, or ALLOWED's row): {over}"
    stale = {key: n for key, n in ALLOWED.items() if found.get(key, 0) < n}
    assert not stale, f"shorter now: lower or delete their ALLOWED rows: {stale}"


def test_the_scan_counts_decorators_and_docstrings(tmp_path):
    source = 'class A:\n    @staticmethod\n    def f():\n        """doc"""\n        return 1\n'
    (tmp_path / "m.py").write_text(source)
    assert function_lengths(tmp_path / "m.py") == {"A.f": 4}
