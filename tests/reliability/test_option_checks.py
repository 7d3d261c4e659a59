"""Options checked before any work: a contradiction, a bad value or an output in the wrong place is one line
(exit 2) before a progress bar or a file appears; choice values are taken in any case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.reliability.helpers import corpusprep, error_line, output_files

pytestmark = pytest.mark.xdist_group("option_checks")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("option_checks")
    corpus = write_bert(root / "corpus.txt", synthetic_documents(120, seed=3))
    paths = {"vocab": make_vocab(root / "vocab"), "corpus": corpus, "pairs": root / "pairs",
             "shards": root / "shards"}
    for args in (
        ["build-pairs", paths["corpus"], "--vocab", paths["vocab"], "-o", paths["pairs"], "--input-format",
         "bert", "--workers", "1", "--dupe-factor", "1", "--no-progress"],
        ["shard", paths["pairs"], "--vocab", paths["vocab"], "-o", paths["shards"], "--num-shards", "2",
         "--workers", "1", "--no-progress"],
    ):
        done = corpusprep(*args)
        assert done.returncode == 0, done.stderr
    return paths


def refused(result, *words: str) -> str:
    line = error_line(result)
    assert result.returncode == 2 and all(w in line for w in words), line
    return line


@pytest.mark.slow  # ~6.2 s idle
def test_stats_plot_is_never_written_into_the_shards_and_names_the_formats(built, tmp_path):
    shards = built["shards"]
    before = output_files(shards)
    refused(corpusprep("stats", shards, "--plot", shards / "plot.png"), "overlap")
    refused(corpusprep("stats", shards, "--plot", shards / "train" / "plot.png"), "overlap")
    line = refused(corpusprep("stats", shards, "--plot", tmp_path / "plot.xyz"), "'.xyz'", "png", "svg")
    assert "Length" not in line and not (tmp_path / "plot.xyz").exists()
    assert output_files(shards) == before
    done = corpusprep("stats", shards, "--plot", tmp_path / "plot.SVG")
    assert done.returncode == 0 and (tmp_path / "plot.SVG").read_text().lstrip().startswith("<?xml")
    assert json.loads((shards / "manifest.json").read_text())  # still valid
    assert corpusprep("validate", shards).returncode == 0


@pytest.mark.slow  # ~1.5 s idle
def test_from_vocab_refuses_the_options_it_would_ignore(built, tmp_path):
    vocab_txt = built["vocab"] / "vocab.txt"
    for extra, named in ((["--vocab-size", "100"], "--vocab-size"), (["--reserved", "3"], "--reserved"),
                         (["--vocab-size", "100", "--min-frequency", "5"], "--vocab-size / --min-frequency")):
        refused(corpusprep("vocab", "--from-vocab", vocab_txt, "-o", tmp_path / "v", *extra), named)
        assert not (tmp_path / "v").exists()
    assert corpusprep("vocab", "--from-vocab", vocab_txt, "-o", tmp_path / "v").returncode == 0


def test_choice_values_in_any_case(built, tmp_path):
    done = corpusprep("shard", built["pairs"], "--vocab", built["vocab"], "-o", tmp_path / "s",
                      "--compression", "ZSTD", "--engine", "Local", "--num-shards", "2", "--workers", "1",
                      "--no-progress")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "s" / "manifest.json").read_text())["options"]["compression"] == "zstd"


@pytest.mark.parametrize("bad", [["--engine", "foo"], ["--max-seq-length", "16"]])
def test_bad_shard_options_fail_before_any_work(built, tmp_path, bad):
    result = corpusprep("shard", built["pairs"], "--vocab", built["vocab"], "-o", tmp_path / "s", *bad)
    refused(result, bad[1])
    assert "mask + scatter" not in result.stdout + result.stderr and not (tmp_path / "s" / "train").exists()


def test_a_bad_engine_fails_build_pairs_before_any_work(built, tmp_path):
    result = corpusprep("build-pairs", built["corpus"], "--vocab", built["vocab"], "-o", tmp_path / "p",
                        "--engine", "foo")
    refused(result, "foo")
    assert "read" not in result.stdout + result.stderr.replace("corpusprep: error:", "")


def test_the_vocab_summary_is_whole_lines_when_piped(built, tmp_path):
    out = tmp_path / ("a-rather-long-directory-name-" * 3) / "vocab"
    done = corpusprep("vocab", built["corpus"], "--input-format", "bert", "-o", out, "--vocab-size", "200",
                      "--no-progress")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(f"{out}: ") and lines[0].endswith(" s"), done.stderr  # not cut at 80 columns
