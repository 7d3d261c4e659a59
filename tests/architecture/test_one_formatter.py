"""The formatter question, settled: `ruff check` (lint, line length 110) and no formatter. `ruff format`
would rewrap the hand-laid argument lists and tables the module and function length ratchets count, so
nothing asks for one: a `# fmt:` marker (skip, off, on) speaks to a formatter that never runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"#\s*fmt:\s*(skip|off|on)\b")


def test_no_formatter_markers():
    sources = [p for scope in ("corpusprep", "trainer", "pipelines", "bench", "tests", "scripts")
               for p in sorted((ROOT / scope).rglob("*.py"))]
    assert len(sources) > 200
    marked = [f"{p.relative_to(ROOT)}:{n}" for p in sources
              for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if MARKER.search(line)]
    assert not marked, f"formatter markers with no formatter run (see this test's docstring): {marked[:5]}"
