"""The `sentences` stage's driver as a library call (`split.sentences.run_sentences`: the command is only its
options and summary): it writes the file and its record, finds a rerun up to date, refuses other options."""

from __future__ import annotations

import json

import pytest

from corpusprep.errors import UsageError
from corpusprep.read import ReadOptions
from corpusprep.split import SentencesOptions
from corpusprep.split.sentences import run_sentences
from corpusprep.split.stage import record_path
from tests.contexts import quiet


def test_a_library_call_writes_the_file_its_record_and_stats_and_a_rerun_is_up_to_date(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("First one. Second one!\n\nAnother document. With two.\n\n   \n")
    out, stats = tmp_path / "s.txt", tmp_path / "stats.json"
    report = run_sentences([str(corpus)], out, SentencesOptions(), ReadOptions(), stats_file=stats,
                           context=quiet())
    assert out.read_text() == "First one.\nSecond one!\n\nAnother document.\nWith two.\n"
    assert report["split"]["sentences"] == 4 and report["split"]["used"] == 2
    assert json.loads(stats.read_text()) == report and record_path(out).is_file()
    stats.unlink()
    assert run_sentences([str(corpus)], out, SentencesOptions(), ReadOptions(), stats_file=stats) is None
    assert "up to date" in capsys.readouterr().err and json.loads(stats.read_text()) == report  # kept
    with pytest.raises(UsageError, match="other inputs or options .*language"):
        run_sentences([str(corpus)], out, SentencesOptions(language="de"), ReadOptions())
    redone = run_sentences([str(corpus)], out, SentencesOptions(language="de"), ReadOptions(),
                           context=quiet(overwrite=True))
    assert redone["language"] == "de" and out.read_text().count("\n") == 5
