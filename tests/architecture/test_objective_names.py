"""A ratchet: outside their packages (corpusprep/objectives/, corpusprep/mask/strategies/), code asks an
objective or a masking strategy instead of branching on its name. Counted by `ast` over corpusprep/, trainer/
and pipelines/: comparisons with a name (`==`, `!=`, `in`), `match` cases, subscripts and dict literals keyed
by names, and defaults that repeat one (argument and field defaults, `.get(key, name)`: a second source of
the default). Each file may keep at most the places ALLOWED lists (what is left to move); comparisons with a
setting in FALSE_FRIENDS (`compression == "none"`) are not counted. Lower a number when you move a branch,
never raise one."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"nsp", "sop", "none", "token", "whole-word", "span"}
SCANNED = ("corpusprep", "trainer", "pipelines")
OWNERS = ("corpusprep/objectives/", "corpusprep/mask/strategies/")
ALLOWED: dict[str, int] = {}
# Settings whose values share a name with an objective or strategy (`compression == "none"`): a comparison
# with one of these attributes or variables is not a branch on an objective.
FALSE_FRIENDS = {"compression"}


def _name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value in NAMES


def _false_friend(node: ast.AST) -> bool:
    """`options.compression` or `compression`: a setting whose values only look like our names."""
    return (isinstance(node, ast.Attribute) and node.attr in FALSE_FRIENDS) or (
        isinstance(node, ast.Name) and node.id in FALSE_FRIENDS
    )


def places(tree: ast.AST) -> list[int]:
    """The line of each branch on, or default repeating, an objective or strategy name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            hit = not any(map(_false_friend, operands)) and any(
                _name(o) or isinstance(o, (ast.Tuple, ast.Set, ast.List)) and any(map(_name, o.elts))
                for o in operands
            )
        elif isinstance(node, ast.Dict):
            hit = sum(map(_name, node.keys)) >= 2
        elif isinstance(node, ast.match_case):
            hit = isinstance(node.pattern, ast.MatchValue) and _name(node.pattern.value)
        elif isinstance(node, ast.Subscript):
            hit = _name(node.slice)
        elif isinstance(node, ast.arguments):
            hit = any(map(_name, [*node.defaults, *node.kw_defaults]))
        elif isinstance(node, ast.AnnAssign):
            hit = _name(node.value)
        elif isinstance(node, ast.Call):
            getter = isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            hit = getter and any(map(_name, node.args))
        else:
            continue
        if hit:
            found.append(getattr(node, "lineno", getattr(getattr(node, "pattern", None), "lineno", 0)))
    return found


def count() -> Counter:
    counts: Counter = Counter()
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(OWNERS):
                counts[rel] += len(places(ast.parse(path.read_text(encoding="utf-8"))))
    return +counts


def test_no_new_branch_on_an_objective_or_strategy_name():
    counts = count()
    over = {f: n for f, n in counts.items() if n > ALLOWED.get(f, 0)}
    assert not over, f"branches on objective/strategy names (ask the objective or strategy instead): {over}"
    assert sum(counts.values()) == 0


def test_the_scanner_finds_each_kind_of_branch():
    code = '''
if objective == "nsp": pass
x = {"nsp": 1, "sop": 2}
y = table["span"]
def f(strategy="token"): pass
z = stats.get("objective", "none")
w = name in ("sop", "other")
match name:
    case "whole-word": pass
'''
    assert places(ast.parse(code)) and len(places(ast.parse(code))) == 7
    assert places(ast.parse('if kind == "tokens": pass\nplural(n, "token")')) == []
    assert places(ast.parse('a = options.compression == "none"\nb = compression != "none"')) == []
