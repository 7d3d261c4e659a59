"""The engine is the bottom layer: no module under corpusprep/engine/ imports a stage above it
(corpusprep.read, split, tokenize, pair, mask, shard, objectives, cli, interop), the trainer or the
pipelines, at module level or inside a function. What the engine must know of them it names as strings,
resolved on use: `records.PRODUCERS` (each record kind's schema module), `outputs.OUTPUT_KINDS` (each output
kind's validator). Found by `ast`, without importing anything."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "corpusprep" / "engine"
STAGES = ("read", "split", "tokenize", "pair", "mask", "shard", "objectives", "cli", "interop")
ABOVE = (*(f"corpusprep.{name}" for name in STAGES), "trainer", "pipelines")


def _module(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_names(source: str, package: list[str]) -> list[tuple[int, str]]:
    """(line, dotted name) of everything an import statement in `source` names, relative imports resolved
    against `package` (the importing module's package): `from corpusprep import mask` names
    corpusprep.mask."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found += [(node.lineno, base)] + [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def upward_imports(source: str, package: list[str], where: str) -> list[str]:
    """"WHERE:LINE: NAME" for each import in `source` of a module above the engine."""
    return sorted({f"{where}:{line}: {name}" for line, name in imported_names(source, package)
                   if any(name == top or name.startswith(top + ".") for top in ABOVE)})


def test_the_engine_imports_nothing_from_the_stages_above_it():
    files = sorted(ENGINE.rglob("*.py"))
    assert len(files) > 15  # the whole engine was scanned
    found = []
    for path in files:
        package = _module(path, ROOT)[:-1] if path.name != "__init__.py" else _module(path, ROOT)
        found += upward_imports(path.read_text(encoding="utf-8"), package, path.relative_to(ROOT).as_posix())
    assert found == [], "the engine imports a stage above it (name it as a string):\n" + "\n".join(found)


def test_the_scan_sees_an_upward_import():
    """The scanner itself: absolute, relative and function-level imports of the layers above, and not the
    engine's own modules, corpusprep.errors or a name that merely starts like one (corpusprep.readme)."""
    sample = (
        "from corpusprep.engine import storage\n"
        "from corpusprep.errors import DataError\n"
        "import corpusprep.readme\n"
        "from corpusprep import mask\n"
        "from ..objectives import REGISTRY\n"
        "def f():\n"
        "    import trainer.checkpoint\n"
        "    from pipelines.runner import run\n"
    )
    found = upward_imports(sample, ["corpusprep", "engine"], "x.py")
    assert found == ["x.py:4: corpusprep.mask", "x.py:5: corpusprep.objectives",
                     "x.py:5: corpusprep.objectives.REGISTRY", "x.py:7: trainer.checkpoint",
                     "x.py:8: pipelines.runner", "x.py:8: pipelines.runner.run"]
