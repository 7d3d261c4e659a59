"""`corpusprep sentences` end to end on small text, JSONL and BERT-format inputs, and the stage under it."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from corpusprep.cli import app
from corpusprep.errors import UsageError
from corpusprep.read import Document
from corpusprep.split import split_sentences
from corpusprep.split.stage import SENTENCES_SCHEMA, SentenceStats, split_documents

runner = CliRunner()


def run(*args: str):
    result = runner.invoke(app, ["sentences", *map(str, args)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "a.txt").write_text(
        "Dr. Jones arrived at 5 p.m. on Monday. She left early!\nA new paragraph\n\n"
        "Second document. It has two sentences.\n"
    )
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"id": 1, "text": "One sentence here. And another one."}) + "\n"
        + json.dumps({"id": 2, "text": "  "}) + "\n"
        + json.dumps({"id": 3, "body": "no text field"}) + "\n"
    )
    return tmp_path


def test_text_output(corpus, tmp_path):
    out, stats = tmp_path / "out" / "sentences.txt", tmp_path / "stats.json"
    run(corpus / "a.txt", corpus / "b.jsonl", "-o", out, "--stats", stats)
    assert out.read_text() == (
        "Dr. Jones arrived at 5 p.m. on Monday.\nShe left early!\nA new paragraph\n\n"
        "Second document.\nIt has two sentences.\n\n"
        "One sentence here.\nAnd another one.\n"
    )
    report = json.loads(stats.read_text())
    read, split = report["read"], report["split"]
    assert read["documents_seen"] == 5
    skipped = sum(read["skipped"].values()) + sum(split["skipped"].values())
    assert read["documents_seen"] == split["used"] + skipped
    assert split == {**split, "used": 3, "sentences": 7}
    assert not list(out.parent.glob(".*tmp*"))  # the atomic write left no temporary file


def test_parquet_output(corpus, tmp_path):
    out = tmp_path / "sentences.parquet"
    run(corpus / "a.txt", "-o", out)
    table = pq.read_table(out)
    assert table.schema == SENTENCES_SCHEMA
    rows = table.to_pylist()
    assert [(r["doc_id"], r["sentence_index"]) for r in rows] == [
        ("a.txt:0", 0), ("a.txt:0", 1), ("a.txt:0", 2), ("a.txt:1", 0), ("a.txt:1", 1)]
    assert rows[1]["text"] == "She left early!"


def test_presplit_input_is_kept_and_splitter_choice(corpus, tmp_path):
    bert = tmp_path / "bert.txt"
    bert.write_text("Mr. Smith left. He came back.\nSecond line\n\nOther document\n")
    out = tmp_path / "out.txt"
    run(bert, "--one-sentence-per-line", "-o", out)
    assert out.read_text() == "Mr. Smith left. He came back.\nSecond line\n\nOther document\n"
    run(corpus / "a.txt", "--splitter", "lines", "-o", out, "--overwrite")
    assert out.read_text().splitlines()[0] == "Dr. Jones arrived at 5 p.m. on Monday. She left early!"


def test_refuses_to_replace_and_bad_options(corpus, tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("keep me")
    with pytest.raises(UsageError, match="already exists"):
        run(corpus / "a.txt", "-o", out)
    assert out.read_text() == "keep me"
    with pytest.raises(UsageError, match="--format 'csv'"):
        run(corpus / "a.txt", "-o", tmp_path / "x", "--format", "csv")
    with pytest.raises(UsageError, match="unknown splitter"):
        run(corpus / "a.txt", "-o", tmp_path / "x", "--splitter", "nltk")


def test_cli_error_is_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", "from corpusprep.cli import main; main()", "sentences",
         str(tmp_path / "missing.txt"), "-o", str(tmp_path / "out.txt")],
        capture_output=True, text=True,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("corpusprep: error:") and "missing.txt" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out.txt").exists()


def test_help_explains_every_option():
    result = runner.invoke(app, ["sentences", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    options = ["--output", "--splitter", "--format", "--stats", "--input-format", "--one-sentence-per-line",
               "--text-field", "--on-error", "--overwrite"]
    for option in options:
        assert option in result.output


def test_split_documents_counts_add_up():
    docs = [
        Document("d:0", "One. Two."),
        Document("d:1", "kept as is", sentences=("First given.", "  ", "Second given.")),
        Document("d:2", "", sentences=(" ", "")),
        Document("d:3", "\n \n"),
    ]
    stats = SentenceStats()
    out = list(split_documents(docs, split_sentences, stats))
    assert out == [("d:0", ["One.", "Two."]), ("d:1", ["First given.", "Second given."])]
    assert (stats.documents, stats.used, dict(stats.skipped), stats.presplit, stats.sentences) == (
        4, 2, {"no_sentences": 2}, 1, 4)
    assert stats.documents == stats.used + sum(stats.skipped.values())
