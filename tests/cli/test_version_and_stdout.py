"""`--version` on every entry point, and `-o -`: standard output where the output is text (sentences, the
demo corpus), one line refusing it where the output is a directory or a binary file (never a file or folder
named "-")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from corpusprep import __version__
from corpusprep.errors import guarded
from trainer.export import main as export_main
from trainer.import_hf import main as import_main
from trainer.plot import main as plot_main
from trainer.run import main as run_main

REPO = Path(__file__).resolve().parents[2]


def corpusprep(*args, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corpusprep", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True)


def test_every_entry_point_says_its_version(capsys):
    done = corpusprep("--version")
    assert (done.returncode, done.stdout) == (0, f"corpusprep {__version__}\n")
    for name, main in (("run", run_main), ("export", export_main), ("import_hf", import_main),
                       ("plot", plot_main)):
        try:
            main(["--version"])
        except SystemExit as done:
            assert done.code == 0
        assert capsys.readouterr().out == f"python -m trainer.{name} (corpusprep {__version__})\n"


@pytest.mark.slow  # ~1.8 s idle
def test_sentences_and_the_demo_corpus_go_to_standard_output(tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("Dr. Smith came home. He slept.\n\nA second document. It ends here.\n")
    done = corpusprep("sentences", text, "-o", "-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Dr. Smith came home.\nHe slept.\n\nA second document.\nIt ends here.\n"
    assert done.stderr.startswith("standard output: 4 sentences from 2 of 2 documents")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]  # no file "-", no record beside it
    demo = corpusprep("demo-corpus", "-o", "-", "--max-mb", "0.05", cwd=tmp_path)
    assert demo.returncode == 0 and demo.stderr.startswith("standard output: ")
    assert corpusprep("demo-corpus", "-o", tmp_path / "demo.jsonl", "--max-mb", "0.05").returncode == 0
    assert demo.stdout == (tmp_path / "demo.jsonl").read_text()  # the same bytes as the file
    assert [json.loads(line)["id"] for line in demo.stdout.splitlines()][0] == "__future__"


def test_a_reader_that_stops_early_is_no_error(tmp_path):
    """`corpusprep sentences big.txt -o - | head -1`: no traceback, no error line, exit 0."""
    big = tmp_path / "big.txt"
    big.write_text("One sentence here. Another one there.\n\n" * 50_000)  # more than a pipe buffers
    command = [sys.executable, "-m", "corpusprep", "sentences", str(big), "-o", "-"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(command, cwd=tmp_path, text=True, **pipes) as p:
        assert p.stdout.readline() == "One sentence here.\n"
        p.stdout.close()
        assert p.wait(timeout=120) == 0
        assert p.stderr.read() == ""


@pytest.mark.slow  # ~2.2 s idle
def test_outputs_that_cannot_be_standard_output_are_refused_in_one_line(tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("One sentence. Two.\n")
    refused = [
        ("sentences", text, "-o", "-", "--format", "parquet"),
        ("sentences", text, "-o", "x.txt", "--stats", "-"),
        ("vocab", text, "-o", "-"), ("build-pairs", text, "--vocab", "v", "-o", "-"),
        ("shard", "p", "--vocab", "v", "-o", "-"), ("stats", "s", "--plot", "-"),
        ("run", REPO / "pipelines" / "demo.toml", "--run-dir", "-"),
    ]
    for args in refused:
        done = corpusprep(*args, cwd=tmp_path)
        lines = done.stderr.splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "standard output" in lines[0], (args, done.stderr)
    assert run_main(["--shards", str(tmp_path), "--run-dir", "-"]) == 2
    assert export_main([str(tmp_path), "-"]) == 2 and import_main([str(tmp_path), "-"]) == 2
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "mlm_loss": 7.0}\n')
    assert guarded(lambda: plot_main([str(tmp_path), "--out", "-"])) == 2  # as `python -m trainer.plot` runs
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and all("cannot go to standard output" in line for line in lines), lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "metrics.jsonl"]  # nothing named "-"
