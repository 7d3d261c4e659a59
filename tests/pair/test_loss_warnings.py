"""Losses a user would want to know about are one warning line each (pair/stats.py loss_warnings): an empty
split, and sentences cut at the row length past TRUNCATION_WARN_SHARE of the tokens."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from corpusprep.pair.build import PairOptions, build_pairs
from corpusprep.pair.stats import TRUNCATION_WARN_SHARE
from corpusprep.read import ReadOptions
from tests.contexts import quiet
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.reliability.helpers import REPO, environment


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return make_vocab(tmp_path_factory.mktemp("vocab"))


def books(directory):
    """Ten "books" of 12 paragraphs, each a document with --document-per-file."""
    directory.mkdir()
    for b, sentences in enumerate(synthetic_documents(10, seed=4, sentences=(60, 60))):
        paragraphs = [" ".join(sentences[i : i + 5]) for i in range(0, 60, 5)]
        (directory / f"book{b}.txt").write_text("\n\n".join(paragraphs) + "\n")
    return directory


def warnings_of(caplog, *args, **options) -> tuple[dict, list[str]]:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="corpusprep.pair"):
        stats = build_pairs(*args, **options, context=quiet(1))
    return stats, [r.getMessage() for r in caplog.records if r.name == "corpusprep.pair"]


def test_ten_books_as_documents_leave_no_validation_split_and_say_so(vocab, tmp_path, caplog):
    corpus, per_file = books(tmp_path / "books"), ReadOptions(document_per_file=True)
    options = PairOptions(dupe_factor=1)  # validation_fraction 0.01: 0.1 of 10 documents expected
    stats, said = warnings_of(caplog, [corpus], vocab, tmp_path / "pairs", options, per_file)
    assert stats["documents"] == 10 and stats["splits"]["validation"]["documents"] == 0
    empty = [w for w in said if "validation split is empty" in w]
    assert empty == [f"{tmp_path / 'pairs'}: the validation split is empty: none of the 10 documents fell in "
                     "it (--validation-fraction 0.01: 0.1 expected); pass a larger --validation-fraction, or "
                     "split the text into more documents"]
    options = PairOptions(dupe_factor=1, validation_fraction=0.3)
    stats, said = warnings_of(caplog, [corpus], vocab, tmp_path / "more", options, per_file)
    assert stats["splits"]["validation"]["pairs"] > 0 and not [w for w in said if "split" in w]
    options = PairOptions(dupe_factor=1, validation_fraction=0)  # no validation split asked for: no word
    stats, said = warnings_of(caplog, [corpus], vocab, tmp_path / "none", options, per_file)
    assert not [w for w in said if "split" in w]


@pytest.mark.parametrize("cut, warned", [(50, False), (200, True)])
def test_truncation_past_the_share_is_said_below_it_not(vocab, tmp_path, caplog, cut, warned):
    """10,000 tokens in 1,000 sentences of 10, and one of 29 + `cut` at --max-seq-length 32 (29 tokens a
    sentence): 50 cut is 0.5% of the tokens, 200 is 2%."""
    documents = [[" ".join(f"w{(d * 7 + s + w) % 300}" for w in range(10)) for s in range(10)]
                 for d in range(100)]
    documents[3].append(" ".join(["w5"] * (29 + cut)))
    corpus = write_bert(tmp_path / "c.txt", documents)
    options = PairOptions(dupe_factor=1, max_seq_length=32, validation_fraction=0)
    bert = ReadOptions(format="bert")
    stats, said = warnings_of(caplog, [corpus], vocab, tmp_path / "pairs", options, bert)
    assert stats["splits"]["train"]["sentence_tokens_truncated"] == cut
    assert (cut / (cut + stats["splits"]["train"]["tokens"]) > TRUNCATION_WARN_SHARE) == warned
    truncated = [w for w in said if "tokens" in w and "were cut" in w]
    said_so = (f"{tmp_path / 'pairs'}: {cut / (cut + 10_029):.1%} of the text's tokens ({cut}) were cut: "
               "1 sentences (0.1%) are longer than a row holds (29 tokens at --max-seq-length 32) and keep "
               "their first 29; a longer --max-seq-length keeps them, as may a splitter that finds their "
               "ends (--splitter, --line-breaks)")
    assert truncated == ([said_so] if warned else [])


@pytest.mark.slow  # ~1.5 s idle: a subprocess
def test_the_command_says_it_in_one_warning_line(vocab, tmp_path):
    corpus = books(tmp_path / "books")
    command = [sys.executable, "-m", "corpusprep", "build-pairs", str(corpus), "--vocab", str(vocab), "-o",
               str(tmp_path / "pairs"), "--document-per-file", "--dupe-factor", "1", "--workers", "1",
               "--no-progress"]
    result = subprocess.run(command, cwd=REPO, env=environment(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "validation split is empty" in line]
    assert len(lines) == 1 and lines[0].startswith("corpusprep: warning: "), result.stderr
