"""The documentation holds together: the README stays a front door, every relative link (and anchor) in it
and under docs/ leads somewhere, every test docs/guarantees.md cites exists, and CI's test command is the
README's. Pure text and `ast`: no import of the package, well under a second."""

from __future__ import annotations

import ast
import functools
import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 250
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
FENCED = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)  # (language, code)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# `reliability/test_x.py`, `reliability/test_x.py::test_y`, `::test_y` (a test of the last file named)
CITATION = re.compile(r"`(?:tests/)?((?:\w+/)*test_\w+\.py)?(?:::(\w+)(?:\[[^\]`]*\])?)?`")


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """The text without its fenced code blocks (a `[x](y)` in code is not a link)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (`-` and `_` kept), spaces to `-`."""
    text = heading.strip().lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


@functools.cache
def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, duplicates numbered as GitHub numbers them (`x`, `x-1`, ...)."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(page.read_text()), re.M):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def broken_links(page: Path) -> list[str]:
    """`page: target (why)` for each relative link of `page` that leads nowhere."""
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.name}: {target}"
        if not dest.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{where} (no heading with that anchor)")
    return broken


@functools.cache
def functions_of(path: Path) -> set[str]:
    """The test functions of a test module (methods of test classes too), read with `ast`, not imported."""
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")}


def citations(text: str) -> list[tuple[str, str]]:
    """(file, test) of every citation in `text`, either part "" where it is not given."""
    return [(path, name) for path, name in CITATION.findall(text) if path or name]


def missing_citations(text: str) -> list[str]:
    """Cited test files and `file::test` names that do not exist; `::test` alone is a test of the last file
    named before it."""
    missing, current = [], None
    for path, name in citations(text):
        if path:
            current = REPO / "tests" / path
            if not current.is_file():
                missing.append(f"tests/{path} (no such file)")
                continue
        if name:
            if current is None:
                missing.append(f"::{name} (no file named before it)")
            elif current.is_file() and name not in functions_of(current):
                missing.append(f"{current.relative_to(REPO)}::{name}")
    return missing


def test_the_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/manual/"


def test_every_relative_link_and_anchor_resolves():
    broken = [problem for page in pages() for problem in broken_links(page)]
    assert not broken, "\n".join(broken)


def test_every_page_under_docs_is_linked_from_the_readme():
    readme = (REPO / "README.md").read_text()
    linked = {(REPO / target.partition("#")[0]).resolve() for target in LINK.findall(readme)}
    orphans = [p.relative_to(REPO).as_posix() for p in sorted(REPO.glob("docs/**/*.md")) if p not in linked]
    assert not orphans, f"not linked from README.md: {orphans}"


def test_every_test_the_guarantees_cite_exists():
    text = (REPO / "docs/guarantees.md").read_text()
    assert len(citations(text)) >= 90  # the page still cites its tests (94 citations today)
    missing = missing_citations(text)
    assert not missing, "docs/guarantees.md cites tests that do not exist:\n" + "\n".join(missing)


def test_every_guarantee_cites_a_test():
    text = (REPO / "docs/guarantees.md").read_text()
    bullets = re.split(r"^- ", text, flags=re.M)[1:]
    uncited = [b.split("\n", 1)[0] for b in bullets if not citations(b)]
    assert not uncited, "guarantees without a test:\n" + "\n".join(uncited)


def test_the_readme_gives_the_command_ci_runs():
    """`.ci/run` runs the README's test command, verbatim."""
    blocks = [code for lang, code in FENCED.findall((REPO / "README.md").read_text()) if lang == "bash"]
    shell = [line.split("#")[0].strip() for code in blocks for line in code.splitlines()]
    ci = [line.strip() for line in (REPO / ".ci/run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci == ["./scripts/test"]
    assert "./scripts/test" in shell


@pytest.mark.parametrize("heading, expected", [
    ("What a CPU budget buys (`pipelines/cpu-recipe.toml`)",
     "what-a-cpu-budget-buys-pipelinescpu-recipetoml"),
    ("Output directories: one protocol", "output-directories-one-protocol"),
    ("Sentences: `corpusprep sentences`", "sentences-corpusprep-sentences"),
])
def test_anchors_are_githubs(heading, expected):
    assert slug(heading) == expected


def test_the_checks_find_what_they_look_for(tmp_path):
    """The helpers above find a broken link, a missing anchor and a missing test: the checks can fail."""
    (tmp_path / "a.md").write_text("# A title\n\n## Two: `words`\n\n```\n[in code](nowhere.md)\n```\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#two-words) [self](#b) [web](https://x.org/y)\n# B\n"
                    "[gone](c.md) [bad anchor](a.md#two) [bad here](#a-title)\n")
    assert broken_links(tmp_path / "a.md") == []
    assert broken_links(page) == ["b.md: c.md (no such file)", "b.md: a.md#two (no heading with that anchor)",
                                  "b.md: #a-title (no heading with that anchor)"]
    assert missing_citations("`pair/test_build.py::test_no_such_test`, `::test_layout_and_stats_add_up`") == [
        "tests/pair/test_build.py::test_no_such_test"]
    assert missing_citations("`pair/test_none.py`") == ["tests/pair/test_none.py (no such file)"]
