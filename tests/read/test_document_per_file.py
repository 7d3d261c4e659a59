"""`--document-per-file` (`[input] document_per_file = true`): plain text whose files are the documents (a
folder of stories, a book a file) instead of a document per blank-line-separated paragraph."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from corpusprep.errors import UsageError
from corpusprep.read import ReadOptions
from tests.read.helpers import read_all
from tests.reliability.helpers import corpusprep, error_line


def story(tmp_path: Path, number: int, paragraphs: int = 4) -> Path:
    """A hard-wrapped story: a heading, then paragraphs separated by blank lines (two, now and then)."""
    body = [textwrap.fill(" ".join(f"Story {number}, paragraph {p}: the river ran on, quiet and cold."
                                   for _ in range(3)), 60) for p in range(paragraphs)]
    path = tmp_path / "stories" / f"story{number}.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"CHAPTER {number}\n\n" + "\n\n\n".join(body) + "\n\n")
    return path


def test_each_file_is_one_document_with_its_paragraphs_kept_apart(tmp_path):
    for number in range(3):
        story(tmp_path, number)
    per_paragraph, _ = read_all(tmp_path / "stories")
    docs, stats = read_all(tmp_path / "stories", document_per_file=True)
    assert len(per_paragraph) == 15 and [d.id for d in docs] == [f"story{n}.txt:0" for n in range(3)]
    assert stats.documents_seen == 3 and stats.files == 3
    paragraphs = docs[0].text.split("\n\n")  # one empty line between paragraphs, none at either end
    assert paragraphs[0] == "CHAPTER 0" and len(paragraphs) == 5
    assert [p.text for p in per_paragraph[:5]] == paragraphs  # the same text, in one document


def test_the_size_bound_still_holds(tmp_path):
    path = story(tmp_path, 0, paragraphs=60)
    docs, stats = read_all(path, document_per_file=True, max_document_mb=0.001)
    assert len(docs) > 5 and all(len(d.text.encode()) <= 1000 for d in docs)
    assert stats.documents_cut == 1 and stats.document_parts == len(docs)
    assert all(not d.text.startswith("\n") and not d.text.endswith("\n") for d in docs)


def test_bert_format_and_auto_detection(tmp_path):
    (tmp_path / "bert.txt").write_text("First sentence.\nSecond one.\n\nAnother document's sentence.\n")
    docs, _ = read_all(tmp_path / "bert.txt", format="bert", document_per_file=True)
    assert [d.sentences for d in docs] == [("First sentence.", "Second one.", "Another document's sentence.")]
    (tmp_path / "rows.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    docs, _ = read_all(tmp_path / "bert.txt", tmp_path / "rows.jsonl", document_per_file=True)
    assert [d.id for d in docs] == ["bert.txt:0", "rows.jsonl:0", "rows.jsonl:1"]  # JSONL says where docs end
    for fmt in ("jsonl", "wiki", "parquet"):
        with pytest.raises(UsageError, match=f"document_per_file: for plain text only .* not {fmt}"):
            ReadOptions(format=fmt, document_per_file=True)


@pytest.mark.slow  # ~2.1 s idle
def test_every_reading_command_takes_the_flag(tmp_path):
    for number in range(3):
        story(tmp_path, number)
    result = corpusprep("sentences", tmp_path / "stories", "-o", tmp_path / "s.txt", "--document-per-file",
                        "--stats", tmp_path / "stats.json", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "stats.json").read_text())["split"]["used"] == 3
    blocks = (tmp_path / "s.txt").read_text().strip().split("\n\n")
    assert len(blocks) == 3 and blocks[0].startswith("CHAPTER 0\nStory 0, paragraph 0: the river ran on")
    vocab = corpusprep("vocab", tmp_path / "stories", "-o", tmp_path / "vocab", "--vocab-size", "150",
                       "--document-per-file", "--no-progress")
    assert vocab.returncode == 0, vocab.stderr
    pairs = corpusprep("build-pairs", tmp_path / "stories", "--vocab", tmp_path / "vocab", "-o",
                       tmp_path / "pairs", "--document-per-file", "--validation-fraction", "0",
                       "--no-progress")
    assert pairs.returncode == 0, pairs.stderr
    assert json.loads((tmp_path / "pairs" / "stats.json").read_text())["read"]["documents_seen"] == 3
    refused = corpusprep("sentences", tmp_path / "stories", "-o", tmp_path / "t.txt", "--document-per-file",
                         "--input-format", "jsonl")
    assert refused.returncode == 2
    assert error_line(refused).startswith("--document-per-file: for plain text only"), refused.stderr
