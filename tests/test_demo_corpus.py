"""The embedded demo corpus: deterministic, a useful size, clean prose, readable by the read stage."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from corpusprep.demo_corpus import (
    DEFAULT_MAX_MB,
    MIN_CHARS,
    clean_docstring,
    update_demo_corpus,
    write_demo_corpus,
)
from corpusprep.errors import UsageError
from corpusprep.read import ReadOptions, ReadStats, iter_documents


@pytest.fixture(scope="module")
def default_corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "demo.jsonl"
    stats = write_demo_corpus(path)
    return path, stats


@pytest.mark.slow  # ~8.7 s idle
def test_default_size_and_counts(default_corpus):
    path, stats = default_corpus
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == stats.documents > 3000
    text_bytes = sum(len(r["text"].encode("utf-8")) for r in records)
    assert text_bytes == stats.bytes
    assert 0.95 * DEFAULT_MAX_MB * 1e6 < text_bytes <= DEFAULT_MAX_MB * 1e6  # fills the budget, no more
    assert stats.docstrings == stats.documents + sum(stats.dropped.values())
    assert len({r["id"] for r in records}) == len(records) == len({r["text"] for r in records})
    assert all(len(r["text"]) >= MIN_CHARS for r in records)
    assert stats.sources[0].startswith("python ")


@pytest.mark.slow  # the default-size corpus fixture: ~15 s
def test_prose_is_clean(default_corpus):
    path, _ = default_corpus
    texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]
    lines = [line for text in texts for line in text.split("\n")]
    assert not any(line.lstrip().startswith(">>>") for line in lines)
    assert not any(line.lstrip().startswith(".. ") for line in lines)
    assert sum(":func:`" in t or ":class:`" in t for t in texts) == 0
    assert not any("\n\n" in t for t in texts)  # one paragraph a line, as the read stage expects
    # mostly English prose: letters and spaces dominate, and common English words are frequent
    alpha = sum(c.isalpha() or c == " " for t in texts for c in t) / sum(map(len, texts))
    assert alpha > 0.8
    words = " ".join(texts).lower().split()
    assert words.count("the") / len(words) > 0.03


@pytest.mark.slow  # ~3.7 s idle
def test_deterministic_across_builds(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_demo_corpus(first, max_mb=0.5)
    # a separate interpreter: different hash seed, fresh imports
    code = "import sys; from corpusprep.demo_corpus import write_demo_corpus as w; w(sys.argv[1], 0.5)"
    subprocess.run([sys.executable, "-c", code, str(second)], check=True)
    assert first.read_bytes() == second.read_bytes()
    assert first.stat().st_size > 400_000


def test_readable_by_the_read_stage(default_corpus):
    path, stats = default_corpus
    read = ReadStats()
    docs = list(iter_documents([path], ReadOptions(format="auto"), read))
    assert len(docs) == read.documents == stats.documents and not read.skipped
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [d.text for d in docs] == [r["text"] for r in records]


@pytest.mark.slow  # ~3.9 s idle
def test_cli_builds_then_reuses(tmp_path):
    command = [sys.executable, "-m", "corpusprep", "demo-corpus", "-o", "d.jsonl", "--max-mb", "0.2"]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "documents" in first.stderr
    mtime = (tmp_path / "d.jsonl").stat().st_mtime_ns
    second = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert second.returncode == 0 and "reused" in second.stderr
    assert (tmp_path / "d.jsonl").stat().st_mtime_ns == mtime
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    other = subprocess.run([*command[:-1], "0.1"], cwd=tmp_path, capture_output=True, text=True)
    assert other.returncode == 2 and "--overwrite" in other.stderr and "Traceback" not in other.stderr
    assert (tmp_path / "d.jsonl").stat().st_mtime_ns == mtime


def test_clean_docstring():
    doc = """Return the thing.

        This paragraph is
        wrapped and cites :func:`~os.path.join` and ``x + 1``.

        Example::

            f(1)

        >>> g(2)
        3

        :param int count: How many.
        :returns: The value.

        .. versionadded:: 3.2
           Extra.

        Notes
        -----
        - item one
        - item two
        """
    assert clean_docstring(doc).split("\n") == [
        "Return the thing.",
        "This paragraph is wrapped and cites os.path.join and x + 1.",
        "Example:",
        "count: How many.",
        "returns: The value.",
        "Notes",
        "- item one",
        "- item two",
    ]


@pytest.mark.parametrize("max_mb", [float("inf"), float("nan"), 0.0, -1.0])
def test_max_mb_must_be_positive_and_finite(tmp_path, max_mb):
    with pytest.raises(UsageError, match="--max-mb .*positive, finite"):
        write_demo_corpus(tmp_path / "d.jsonl", max_mb)
    assert not list(tmp_path.iterdir())


def test_cli_max_mb_inf_is_one_line(tmp_path):
    command = [sys.executable, "-m", "corpusprep", "demo-corpus", "-o", "d.jsonl", "--max-mb", "inf"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr == "corpusprep: error: --max-mb inf: give a positive, finite number of MB\n"


def test_a_directory_is_refused_before_the_build(tmp_path):
    with pytest.raises(UsageError, match="is a directory"):
        update_demo_corpus(tmp_path, 1000)  # refused at once, not after building 1000 MB


@pytest.mark.slow  # ~2.7 s idle
def test_an_existing_file_is_reused_only_when_it_is_this_corpus(tmp_path):
    path = tmp_path / "d.jsonl"
    assert "documents" in update_demo_corpus(path, 0.05)
    built, before = path.stat().st_mtime_ns, path.read_bytes()
    assert "up to date" in update_demo_corpus(path, 0.05)
    assert path.stat().st_mtime_ns == built  # stages fingerprint its mtime: a rebuild would look like an edit
    with pytest.raises(UsageError, match="not the demo corpus of --max-mb 0.08.*--overwrite"):
        update_demo_corpus(path, 0.08)
    assert path.read_bytes() == before and not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    update_demo_corpus(path, 0.08, overwrite=True)
    assert len(path.read_bytes()) > len(before)
