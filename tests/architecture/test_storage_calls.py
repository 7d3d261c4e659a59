"""A ratchet: code lists, opens, writes, renames and removes files through the storage seam
(corpusprep/engine/storage.py), so that another file system is one module there. Counted by `ast` over
corpusprep/, trainer/ and pipelines/ (not tests/ or bench/), outside the seam itself (storage.py,
local_store.py and fsspec_store.py, the stores of its `STORES`):
- the builtin `open`;
- a path method: `.open`, `.read_text`, `.write_text`, `.read_bytes`, `.write_bytes`, `.glob`, `.rglob`,
  `.iterdir`, `.unlink`, `.mkdir`, `.rmdir`, `.touch`, and `.rename` / `.replace` with one argument (a
  string's `replace` takes two); a function of one of our own modules (`records.read_bytes`) is not one;
- `os.open`, `os.replace`, `os.rename`, `os.listdir`, `os.scandir`, `os.walk`, `os.remove`, `os.unlink`,
  `os.mkdir`, `os.makedirs`, `os.rmdir`; any `shutil.*`;
- pyarrow given a path: `pq.write_table`, `pq.ParquetFile`, `pq.read_table`, `pq.ParquetWriter`,
  `pq.read_metadata`, `pq.read_schema`, `pa.memory_map`, `pa.OSFile`.
A call that legitimately stays is listed in ALLOWED with why; the test fails when a file has more.
Lower a number when you move a call, never raise one.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("corpusprep", "trainer", "pipelines")
# the seam: storage.py and the stores of `STORES` (a store's calls are on its own file system)
SEAM = ("corpusprep/engine/storage.py", "corpusprep/engine/local_store.py",
        "corpusprep/engine/fsspec_store.py")
PATH_METHODS = frozenset({"open", "read_text", "write_text", "read_bytes", "write_bytes", "glob", "rglob",
                          "iterdir", "unlink", "mkdir", "rmdir", "touch", "rename", "replace"})
ONE_ARGUMENT = frozenset({"rename", "replace"})  # Path's take one (str.replace two, DataFrame.rename a dict)
OS_CALLS = frozenset({"open", "replace", "rename", "listdir", "scandir", "walk", "remove", "unlink", "mkdir",
                      "makedirs", "rmdir"})
ARROW_CALLS = {"pq": frozenset({"write_table", "ParquetFile", "read_table", "ParquetWriter", "read_metadata",
                                "read_schema"}),
               "pa": frozenset({"memory_map", "OSFile"})}

# What stays, per file, and why. Not a store's files: this machine's own.
ALLOWED: dict[str, Counter] = {
    # the running Python's standard library sources, which the demo corpus is made of (never a store)
    "corpusprep/demo_corpus.py": Counter({".rglob": 1, ".read_bytes": 1, ".glob": 1}),
    # flock needs the lock file opened on this machine (storage.local_path first); /proc/locks names readers
    "corpusprep/engine/lock.py": Counter({"os.open": 1, ".read_text": 1}),
    "corpusprep/console.py": Counter({"os.open": 1}),  # /dev/null under a closed standard output
    "corpusprep/settings.py": Counter({".read_text": 1}),  # /sys/fs/cgroup: this machine's memory limit
    "trainer/checkpoint.py": Counter({".read_text": 1}),  # /proc/self/status: this process's umask
    "trainer/threads.py": Counter({".read_text": 1}),  # /sys/fs/cgroup: this machine's CPU quota
    # Parquet read from the stream the seam opened (read/streams.open_file), not from a path
    "corpusprep/read/formats.py": Counter({"pq.ParquetFile": 1}),
}


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _our_modules(tree: ast.AST) -> set[str]:
    """Names bound to a module of this project (`from corpusprep.engine import records`): calls on them are
    functions whose own bodies are scanned, never a path's methods."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in SCANNED:
            for alias in node.names:
                if _is_module(f"{node.module}.{alias.name}"):
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.asname and a.name.split(".")[0] in SCANNED}
    return names


def calls(source: str) -> list[tuple[int, str]]:
    """(line, what) of each direct file-system call in `source`."""
    tree = ast.parse(source)
    ours = _our_modules(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((node.lineno, "open()"))
            continue
        if not isinstance(func, ast.Attribute):
            continue
        base = func.value.id if isinstance(func.value, ast.Name) else None
        if base == "os":
            what = f"os.{func.attr}" if func.attr in OS_CALLS else None
        elif base == "shutil":
            what = f"shutil.{func.attr}"
        elif base in ARROW_CALLS:
            what = f"{base}.{func.attr}" if func.attr in ARROW_CALLS[base] else None
        elif base in ours or func.attr not in PATH_METHODS:
            what = None
        elif func.attr in ONE_ARGUMENT:
            plain = len(node.args) == 1 and not node.keywords
            path_like = plain and not isinstance(node.args[0], (ast.Dict, ast.Constant))
            what = f".{func.attr}" if path_like else None
        else:
            what = f".{func.attr}"
        if what:
            found.append((node.lineno, what))
    return found


def count(root: Path = ROOT) -> dict[str, Counter]:
    """{file: Counter(what)} over the scanned packages, the seam left out."""
    counts = {}
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            found = Counter(what for _, what in calls(path.read_text(encoding="utf-8")))
            if rel not in SEAM and found:
                counts[rel] = found
    return counts


def test_no_file_system_call_outside_the_storage_seam():
    counts = count()
    assert len(counts) >= 5  # the scan saw the allowed ones: it runs over the real tree
    over = {f: dict(extra) for f, c in counts.items() if (extra := c - ALLOWED.get(f, Counter()))}
    assert not over, f"direct file-system calls (go through corpusprep.engine.storage): {over}"
    total = sum(sum(c.values()) for c in counts.values())
    allowed = sum(sum(c.values()) for c in ALLOWED.values())
    assert total == allowed, f"{total} calls left, {allowed} allowed: lower ALLOWED to what is left"


def test_the_scanner_finds_each_kind_of_call():
    code = """
from pathlib import Path
import os, shutil
import pyarrow as pa
import pyarrow.parquet as pq
from corpusprep.engine import records
open("x")
p = Path("x")
p.read_text(); p.write_bytes(b""); p.glob("*"); p.rglob("*"); p.iterdir(); p.unlink(); p.mkdir()
p.rename(q); p.replace(q)
os.replace(a, b); os.listdir(d); os.walk(d); os.makedirs(d)
shutil.rmtree(d)
pq.write_table(t, p); pq.ParquetFile(p); pa.memory_map(p)
"""
    kinds = Counter(what for _, what in calls(code))
    assert kinds == Counter({"open()": 1, ".read_text": 1, ".write_bytes": 1, ".glob": 1, ".rglob": 1,
                             ".iterdir": 1, ".unlink": 1, ".mkdir": 1, ".rename": 1, ".replace": 1,
                             "os.replace": 1, "os.listdir": 1, "os.walk": 1, "os.makedirs": 1,
                             "shutil.rmtree": 1, "pq.write_table": 1, "pq.ParquetFile": 1,
                             "pa.memory_map": 1})
    harmless = """
from corpusprep.engine import records, storage
text.replace("a", "b"); frame.rename({"n": "from"}); dataclasses.replace(c, x=1); s.replace("\\n")
records.read_bytes(p); storage.glob(p, "*"); storage.open_file(p); os.getpid(); pa.table({})
"""
    assert calls(harmless) == []
