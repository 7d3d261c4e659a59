"""The embedded demo corpus: English prose built at run time from the documentation that ships with Python.

No download and no text in the repository: the documents are the docstrings of the standard library and of
corpusprep's own runtime dependencies (numpy, pyarrow, polars, ...), which exist wherever corpusprep runs.
One document per module, class or function, cleaned of doctest sessions and reST markup, in a fixed order,
so the same Python install always gives the same corpus.

Python sources are read with `ast`, never imported: importing thousands of modules is slow and some have
side effects (`antigravity` opens a browser, `this` prints). Only C extension modules of the standard library
(math, itertools, builtins, ...), whose docs exist nowhere else, are imported, quietly and with a denylist.
"""

from __future__ import annotations

import ast
import contextlib
import filecmp
import importlib
import importlib.util
import inspect
import io
import json
import math
import re
import sys
import sysconfig
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from corpusprep.engine import storage
from corpusprep.engine.files import atomic_path
from corpusprep.errors import UsageError

# 4 MB of text is about 1M word pieces: a 2-layer BERT sees it several times in a few minutes of CPU
# training (enough to learn frequent words and syntax), while the whole demo pipeline stays at seconds.
DEFAULT_MAX_MB = 4.0
MIN_CHARS = 200  # shorter docstrings are one-liners ("Return the sum.") with no sentence pairs to offer
# corpusprep's runtime dependencies, most prose-rich first: installed wherever corpusprep is.
PACKAGES = ("numpy", "pyarrow", "polars", "matplotlib", "rich", "typer", "tokenizers", "safetensors", "torch")
SKIP_DIRS = {"test", "tests", "testing", "idle_test", "turtledemo", "site-packages", "dist-packages",
             "lib-dynload", "__pycache__", "_vendor", "_bundled"}
# C modules that touch the terminal or a display, or exist only for CPython's own tests.
SKIP_EXTENSIONS = {"readline", "curses", "tkinter", "xxlimited", "xxlimited_35", "xxsubtype"}

_DOCTEST = re.compile(r"^\s*(>>>|\.\.\.)( |$)")
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\s*\.\. ")
# :param int x: -> x:, :returns: -> returns:
_FIELD = re.compile(r"^(\s*):(\w+)(?: [^:`]*?)?(?: (\w+))?:(?=\s|$)")
_ROLE = re.compile(r":[\w:.-]+:`~?([^`<]*?)(?:\s*<[^`>]*>)?`")  # :func:`~os.path.join` -> os.path.join
_LITERAL = re.compile(r"``(.+?)``|`([^`\n]+)`_{0,2}")


def clean_docstring(doc: str) -> str:
    """Docstring -> plain prose: dedented; doctest sessions, literal blocks, directives and heading
    underlines dropped; reST roles and literals reduced to their text; one paragraph a line."""
    lines = inspect.cleandoc(doc).splitlines()
    kept: list[str] = []
    skip_indent: int | None = None  # inside a dropped block: drop lines indented deeper than this
    in_doctest = False
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if not line.strip():
            in_doctest = False
            kept.append("")
            continue
        if skip_indent is not None:
            if indent > skip_indent:
                continue
            skip_indent = None
        if in_doctest or _DOCTEST.match(line):
            in_doctest = True  # a session runs until the next blank line (prompts, then expected output)
            continue
        if _UNDERLINE.match(line):
            continue
        if _DIRECTIVE.match(line):
            skip_indent = indent
            continue
        if line.rstrip().endswith("::"):  # reST literal block follows: keep the sentence, drop the code
            skip_indent = indent
            line = line.rstrip()[:-1]
            if line.strip() == ":":
                continue
        line = _FIELD.sub(lambda m: f"{m[1]}{m[3] or m[2]}:", line)
        line = _ROLE.sub(r"\1", line)
        line = _LITERAL.sub(lambda m: m[1] or m[2], line)
        kept.append(line)
    paragraphs: list[list[str]] = [[]]
    for line in kept:
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    # One paragraph a line: the read stage's convention ("\n" is a hard sentence boundary).
    from corpusprep.split.linebreaks import unwrap_paragraph  # not at the top: the CLI imports this module

    return "\n".join(unwrap_paragraph(p) for p in paragraphs if p).strip()


@dataclass
class DemoStats:
    """What was scanned and kept: docstrings == documents + dropped (by reason), up to the budget."""

    modules: int = 0
    skipped_modules: Counter[str] = field(default_factory=Counter)
    docstrings: int = 0
    documents: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    bytes: int = 0
    sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"modules": self.modules, "skipped_modules": dict(sorted(self.skipped_modules.items())),
                "docstrings": self.docstrings, "documents": self.documents,
                "dropped": dict(sorted(self.dropped.items())), "bytes": self.bytes, "sources": self.sources}

    def summary(self) -> str:
        return (f"{self.documents:,} documents, {self.bytes / 1e6:.1f} MB of text from {self.modules:,} "
                f"modules ({', '.join(self.sources)})")


def _python_files(root: Path) -> Iterator[tuple[Path, str]]:
    """(file, dotted module name) under a source root, sorted, without test suites and vendored code."""
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if any(p in SKIP_DIRS or not p.isidentifier() for p in parts[:-1]):
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name and all(p.isidentifier() for p in name.split(".")):
            yield path, name


def _ast_docstrings(tree: ast.AST, prefix: str) -> Iterator[tuple[str, str]]:
    """(qualified name, docstring) of a module and every class and function inside it, in source order."""
    doc = ast.get_docstring(tree, clean=False)  # type: ignore[arg-type]
    if doc:
        yield prefix, doc
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _ast_docstrings(node, f"{prefix}.{node.name}")


def _source_docstrings(root: Path, stats: DemoStats, package: str = "") -> Iterator[tuple[str, str]]:
    for path, name in _python_files(root):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences in old sources
                tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, OSError):
            stats.skipped_modules["unparsable"] += 1
            continue
        stats.modules += 1
        yield from _ast_docstrings(tree, f"{package}.{name}" if package else name)


def _extension_names() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found = set(sys.builtin_module_names)
    for path in (stdlib / "lib-dynload").glob("*"):
        if path.name.endswith(suffixes):
            found.add(path.name.split(".")[0])
    return sorted(n for n in found if not n.startswith("_") and n not in SKIP_EXTENSIONS)


def _extension_docstrings(stats: DemoStats) -> Iterator[tuple[str, str]]:
    """Docstrings of public stdlib C modules and of the functions, classes and methods they define."""
    for name in _extension_names():
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except Exception:  # a missing shared library, an unsupported platform: not our concern here
            stats.skipped_modules["import_failed"] += 1
            continue
        stats.modules += 1
        if isinstance(module.__doc__, str):
            yield name, module.__doc__
        for attr, obj in sorted(vars(module).items()):
            if getattr(obj, "__module__", None) not in (name, f"_{name}") or not callable(obj):
                continue  # re-exports are documented where they are defined
            if isinstance(obj.__doc__, str):
                yield f"{name}.{attr}", obj.__doc__
            if isinstance(obj, type):
                for method, member in sorted(vars(obj).items()):
                    doc = getattr(member, "__doc__", None)
                    if isinstance(doc, str) and not method.startswith("_"):
                        yield f"{name}.{attr}.{method}", doc


def _raw_docstrings(stats: DemoStats) -> Iterator[tuple[str, str]]:
    """Every (id, docstring) in corpus order: stdlib sources, stdlib C modules, then PACKAGES in order."""
    stats.sources.append(f"python {sys.version.split()[0]} stdlib")
    yield from _source_docstrings(Path(sysconfig.get_paths()["stdlib"]), stats)
    yield from _extension_docstrings(stats)
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)  # finds the package directory without importing it
        if spec is None or not spec.submodule_search_locations:
            stats.skipped_modules["package_not_installed"] += 1
            continue
        version = _version(package)
        stats.sources.append(f"{package} {version}")
        for location in spec.submodule_search_locations:
            yield from _source_docstrings(Path(location), stats, package)


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def iter_demo_documents(
    max_mb: float = DEFAULT_MAX_MB, stats: DemoStats | None = None
) -> Iterator[tuple[str, str]]:
    """(id, text) of the demo corpus: cleaned, deduplicated, at most `max_mb` MB (10^6 bytes) of UTF-8."""
    stats = stats if stats is not None else DemoStats()
    budget = int(check_max_mb(max_mb) * 1_000_000)
    seen_ids: set[str] = set()
    seen_texts: set[str] = set()  # docstrings copied into overrides and C accelerators
    for doc_id, raw in _raw_docstrings(stats):
        stats.docstrings += 1
        text = clean_docstring(raw)
        if len(text) < MIN_CHARS:
            stats.dropped["short"] += 1
        elif doc_id in seen_ids or text in seen_texts:
            stats.dropped["duplicate"] += 1
        else:
            size = len(text.encode("utf-8"))
            if stats.bytes + size > budget:
                stats.docstrings -= 1  # not looked at: the budget is spent
                return
            seen_ids.add(doc_id)
            seen_texts.add(text)
            stats.documents += 1
            stats.bytes += size
            yield doc_id, text


def check_max_mb(max_mb: float) -> float:
    if not (math.isfinite(max_mb) and max_mb > 0):
        raise UsageError(f"--max-mb {max_mb}: give a positive, finite number of MB")
    return max_mb


def _check_path(path: Path) -> None:
    if path.is_dir():
        raise UsageError(f"{path}: is a directory; the demo corpus is written to a file (demo.jsonl, say)")


def write_demo_corpus(path: str | Path, max_mb: float = DEFAULT_MAX_MB) -> DemoStats:
    """Write the demo corpus as JSONL `{"id": ..., "text": ...}` (atomically) and return its stats."""
    check_max_mb(max_mb)
    _check_path(Path(path))
    stats = DemoStats()
    with atomic_path(path) as tmp:
        _write(tmp, max_mb, stats)
    return stats


def _write(path: Path, max_mb: float, stats: DemoStats) -> None:
    with storage.open_file(path, "w", encoding="utf-8") as out:  # `path`: atomic_path's temporary
        write_demo_jsonl(out, max_mb, stats)


def write_demo_jsonl(out: TextIO, max_mb: float, stats: DemoStats) -> None:
    """The demo corpus as JSONL `{"id": ..., "text": ...}`, a document a line, into `out`."""
    check_max_mb(max_mb)
    for doc_id, text in iter_demo_documents(max_mb, stats):
        out.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")


class _Same(Exception):
    """The corpus just built equals the file already there: keep that one."""


def update_demo_corpus(path: str | Path, max_mb: float = DEFAULT_MAX_MB, *, overwrite: bool = False) -> str:
    """`corpusprep demo-corpus`: build the corpus at `path` and return the line to print. A file already
    there is kept when it holds these very bytes, so its modification time, which the stages reading it
    fingerprint, does not move; one that differs (another --max-mb, another Python install, not a demo
    corpus at all) is replaced only with `overwrite`. Comparing costs a build: seconds, by design."""
    check_max_mb(max_mb)
    path = Path(path)
    _check_path(path)
    stats = DemoStats()
    try:
        with atomic_path(path) as tmp:
            _write(tmp, max_mb, stats)
            if path.is_file() and filecmp.cmp(tmp, path, shallow=False):
                raise _Same
            if path.exists() and not overwrite:
                raise UsageError(f"{path}: exists and is not the demo corpus of --max-mb {max_mb:g} on this "
                                 "Python install; pass --overwrite to replace it")
    except _Same:
        return f"{path}: up to date (the same --max-mb on the same Python install), reused"
    return f"{path}: {stats.summary()}"
