"""A ratchet: in corpusprep/, pipelines/ and trainer/, a name of one letter lives a few lines at most. One
bound in a function (a parameter, an assignment, a loop or `with` target) and still read `SPAN` lines further
on names something a reader must keep in mind: it gets a word (`doc`, not `d`; `ranks`, not `d`; `config`,
not `c`). The letters of counts, indices and random draws in vectorised code (`LETTERS`: `n` rows,
`i`/`j`/`k` indices, `u` uniforms, `x`/`y`; the model's `B`/`L`/`T` shapes and attention's `q`/`k`/`v`, as
nanoGPT writes them) are the field's own and stay; comprehension variables live on their line. Found by
`ast`, without importing anything. ALLOWED lists what is left, per function; never add a row."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("corpusprep", "pipelines", "trainer")
SPAN = 10  # lines from where a name is bound to its last read before it is bound again
LETTERS = set("ijkmnuxy") | set("BLTqv")  # and the model's shape letters (batch, length, tokens), q, k, v
ALLOWED: dict[str, int] = {}  # "path:function:letter" -> lines; none left


def _comprehension_targets(function: ast.AST) -> set[tuple[str, int]]:
    targets = set()
    for node in ast.walk(function):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            targets |= {(n.id, n.lineno) for g in node.generators for n in ast.walk(g.target)
                        if isinstance(n, ast.Name)}
    return targets


def long_lived(source: str) -> dict[str, int]:
    """{"function:letter": lines} for each one-letter name (not in LETTERS) that a function reads `SPAN` or
    more lines after binding it."""
    found: dict[str, int] = {}
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        skip = _comprehension_targets(function)
        events: dict[str, list[tuple[int, bool]]] = {}  # letter -> (line, is a binding)
        arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
        for arg in arguments:
            events.setdefault(arg.arg, []).append((arg.lineno, True))
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and (node.id, node.lineno) not in skip:
                events.setdefault(node.id, []).append((node.lineno, isinstance(node.ctx, ast.Store)))
        for name, seen in events.items():
            if len(name) != 1 or name in LETTERS or name == "_":
                continue
            bound, longest = None, 0
            for line, binds in sorted(seen, key=lambda event: (event[0], not event[1])):
                if binds:
                    bound = line
                elif bound is not None:
                    longest = max(longest, line - bound)
            if longest >= SPAN:
                key = f"{function.name}:{name}"
                found[key] = max(found.get(key, 0), longest)
    return found


def test_no_one_letter_name_lives_long():
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for key, lines in long_lived(path.read_text()).items():
                found[f"{path.relative_to(ROOT).as_posix()}:{key}"] = lines
    over = {key: n for key, n in found.items() if n > ALLOWED.get(key, SPAN - 1)}
    assert not over, f"one-letter names read {SPAN}+ lines after they are bound (give each a word): {over}"
    stale = {key: n for key, n in ALLOWED.items() if found.get(key, 0) < n}
    assert not stale, f"shorter now: lower or delete their ALLOWED rows: {stale}"


def test_the_scan_sees_a_long_lived_letter_and_spares_the_rest():
    body = "\n".join(f"    total += {i}" for i in range(SPAN))
    source = (f"def f(d, n):\n    c = [x for x in d]\n    total = 0\n{body}\n    return d, n, c\n"
              f"def g(rows):\n    for r in rows:\n        print(r)\n    for r in rows:\n        print(r)\n")
    assert long_lived(source) == {"f:d": SPAN + 3, "f:c": SPAN + 2}
