"""`corpusprep sentences` end to end on small text, JSONL and BERT-format inputs, and the stage under it."""

from __future__ import annotations

import json
import os
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


def cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """`corpusprep sentences ...` as a user runs it (a child process)."""
    return subprocess.run([sys.executable, "-m", "corpusprep", "sentences", *map(str, args), "--no-progress"],
                          capture_output=True, text=True, cwd=cwd)


def one_error(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and lines[-1].startswith("corpusprep: error: "), result.stderr
    return lines[-1]


@pytest.mark.slow  # ~1.6 s idle
def test_every_output_is_checked_before_any_work(corpus, tmp_path):
    """--stats is an output like -o: never an input, never -o, never under a file; refused before -o is
    written (it used to overwrite the input, or fail after the sentences were written)."""
    source = corpus / "a.txt"
    before = source.read_bytes()
    out = tmp_path / "out" / "s.txt"
    (tmp_path / "afile").write_text("a file\n")
    for stats, expected in [(source, "overlap"), (out, "name the same file"),
                            (tmp_path / "afile" / "s.json", "is a file, not a directory"),
                            (tmp_path, "is a directory")]:
        line = one_error(cli(source, "-o", out, "--stats", stats))
        assert expected in line, line
        assert not out.exists() and source.read_bytes() == before
    assert not list(tmp_path.rglob(".*.tmp-*"))  # the probes left nothing


def test_output_name_chooses_the_format_in_any_case_and_a_directory_name_is_refused(corpus, tmp_path):
    for name in ("s.PARQUET", "s.pq"):
        run(corpus / "a.txt", "-o", tmp_path / name)
        assert pq.read_table(tmp_path / name).schema == SENTENCES_SCHEMA
    line = one_error(cli(corpus / "a.txt", "-o", f"{tmp_path / 'newdir'}/"))
    assert "--output" in line and "newdir/" in line and "file name" in line
    assert not (tmp_path / "newdir").exists()


def test_a_killed_runs_temporary_files_are_removed_by_the_next(corpus, tmp_path):
    out = tmp_path / "s.txt"
    dead = tmp_path / f".s.txt.tmp-{_dead_pid()}"  # a killed write's leftovers
    alive = tmp_path / f".s.txt.tmp-{os.getpid()}"  # this test's process: a run writing the same file now
    other = tmp_path / f".t.txt.tmp-{_dead_pid()}"  # another file's: not this command's business
    for path in (dead, alive, other):
        path.write_text("partial")
    assert cli(corpus / "a.txt", "-o", out).returncode == 0
    assert not dead.exists() and alive.exists() and other.exists()


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.slow  # ~3.3 s idle
def test_a_rerun_is_up_to_date_and_a_changed_one_names_the_change(corpus, tmp_path):
    out, stats = tmp_path / "s.txt", tmp_path / "stats.json"
    assert cli(corpus / "a.txt", "-o", out, "--stats", stats).returncode == 0
    built, report = out.stat().st_mtime_ns, stats.read_text()
    stats.unlink()
    again = cli(corpus / "a.txt", "-o", out, "--stats", stats)
    assert again.returncode == 0 and "up to date" in again.stderr, again.stderr
    assert out.stat().st_mtime_ns == built and stats.read_text() == report  # the run's own stats, again
    line = one_error(cli(corpus / "a.txt", "-o", out, "--splitter", "lines"))
    assert 'options.splitter: "default" -> "lines"' in line and "--overwrite" in line
    with open(corpus / "a.txt", "a") as f:
        f.write("\nAppended document. Read it.\n")
    line = one_error(cli(corpus / "a.txt", "-o", out))
    assert "a.txt: modified" in line, line
    assert cli(corpus / "a.txt", "-o", out, "--overwrite").returncode == 0
    assert "Appended document." in out.read_text()
    out.write_text("edited by hand\n")  # no longer what the record describes: a file of the user's
    line = one_error(cli(corpus / "a.txt", "-o", out))
    assert line.endswith("already exists; pass --overwrite to replace it")
