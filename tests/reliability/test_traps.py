"""Defaults and mistakes that used to "succeed": a wrong --input-format, a vocab that does not fit the text,
`validate` on something other than shards, unreadable plots. Each now fails or warns in one line."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.test_no_tracebacks import TRACEBACK, corpus_and_vocab, corpusprep, environment, ok

WRONG_FORMAT = ["--input-format", "jsonl"]  # the corpus is plain text: every line is "invalid JSON"


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def w(tmp_path_factory) -> Path:
    w = tmp_path_factory.mktemp("traps")
    corpus_and_vocab(w)
    # Greek text: an English vocab's alphabet has none of its letters, so nearly every word is [UNK]
    rng = random.Random(0)
    letters = "αβγδεζηθικλμνξοπρστυφχψω"
    words = lambda n: " ".join("".join(rng.choices(letters, k=rng.randint(2, 8))) for _ in range(n))  # noqa: E731
    paragraphs = [f"{words(12)}. {words(9)}. {words(15)}." for _ in range(60)]
    (w / "greek.txt").write_text("\n\n".join(paragraphs) + "\n")
    return w


def last_line(result: subprocess.CompletedProcess) -> str:
    assert TRACEBACK not in result.stderr, result.stderr
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.slow  # ~4.1 s idle (all cases)
@pytest.mark.parametrize("command", ["vocab", "sentences", "build-pairs"])
def test_a_wrong_input_format_is_an_error_naming_the_skips(command: str, w: Path, tmp_path: Path):
    out = tmp_path / "out"
    args = {"vocab": ["vocab", str(w / "corpus.txt"), "-o", str(out)],
            "sentences": ["sentences", str(w / "corpus.txt"), "-o", str(out)],
            "build-pairs": ["build-pairs", str(w / "corpus.txt"), "--vocab", str(w / "vocab"), "-o", str(out)]
            }
    result = run(corpusprep(*args[command], *WRONG_FORMAT), tmp_path)
    assert result.returncode == 1, result.stderr
    line = last_line(result)
    assert "no usable documents in" in line and str(w / "corpus.txt") in line, line
    assert "invalid_json" in line and "wrong --input-format" in line, line
    # nothing that looks like a result: no vocab files, no sentences file, no pairs
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")]


@pytest.mark.slow  # ~1.6 s idle
def test_an_empty_corpus_is_an_error_in_every_reading_command(w: Path, tmp_path: Path):
    (tmp_path / "blank.txt").write_text("\n  \n\n\t\n")
    for args in (["vocab", "blank.txt", "-o", "v"], ["sentences", "blank.txt", "-o", "s.txt"],
                 ["build-pairs", "blank.txt", "--vocab", str(w / "vocab"), "-o", "p"]):
        result = run(corpusprep(*args), tmp_path)
        assert result.returncode == 1, result.stderr
        assert "no usable documents in blank.txt" in last_line(result), result.stderr


def test_the_right_format_is_not_warned_about(w: Path, tmp_path: Path):
    result = run(corpusprep("build-pairs", str(w / "corpus.jsonl"), "--vocab", str(w / "vocab"), "-o", "p",
                            "--dupe-factor", "1", "--workers", "1", "--no-progress"), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "[UNK]" not in result.stderr, result.stderr


@pytest.mark.slow  # ~1.1 s idle
def test_unk_above_5_percent_is_a_loud_warning(w: Path, tmp_path: Path):
    # build-pairs: Greek text with an English vocab
    result = run(corpusprep("build-pairs", str(w / "greek.txt"), "--vocab", str(w / "vocab"), "-o", "p",
                            "--dupe-factor", "1", "--workers", "1", "--no-progress"), tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "[UNK]" in line]
    assert len(warnings) == 1 and warnings[0].startswith("corpusprep: warning: "), result.stderr
    assert "wrong --input-format" in warnings[0] and "cased" in warnings[0]
    rate = float(warnings[0].split("% of tokens")[0].rsplit(" ", 1)[1])
    assert rate > 50, warnings[0]
    # vocab: adopting the English vocab.txt, measured on the Greek text
    result = run(corpusprep("vocab", "--from-vocab", str(w / "vocab" / "vocab.txt"), str(w / "greek.txt"),
                            "-o", "v"), tmp_path)
    assert result.returncode == 0, result.stderr
    assert sum("[UNK] (over 5%)" in line for line in result.stderr.splitlines()) == 1, result.stderr


@pytest.mark.slow  # ~7.2 s idle
def test_validate_says_what_it_found(w: Path, tmp_path: Path):
    ok(corpusprep("build-pairs", str(w / "corpus.jsonl"), "--vocab", str(w / "vocab"), "-o", "pairs",
                  "--dupe-factor", "1", "--workers", "1", "--no-progress"), tmp_path)
    ok(corpusprep("shard", "pairs", "--vocab", str(w / "vocab"), "-o", "shards", "--num-shards", "2",
                  "--workers", "1", "--no-progress"), tmp_path)
    ok(corpusprep("build-pairs", str(w / "corpus.jsonl"), "--vocab", str(w / "vocab"), "-o", "rows",
                  "--objective", "none", "--dupe-factor", "1", "--workers", "1", "--no-progress"), tmp_path)
    found = (("pairs", "pairs directory", "pairs"), ("shards", "shards directory", "examples"),
             ("rows", "pairs directory", "rows"))
    for name, kind, unit in found:
        result = run(corpusprep("validate", name), tmp_path)
        assert result.returncode == 0 and result.stdout.startswith(f"{name}: valid {kind} ("), result
        assert f" {unit} in " in result.stdout, result.stdout
    result = run(corpusprep("validate", str(w / "vocab")), tmp_path)
    assert result.returncode == 0 and "valid vocab directory (2,000 tokens" in result.stdout, result
    # one problem, counted in the singular, and the kind named
    part = next((tmp_path / "pairs" / "train").glob("*.parquet"))
    part.write_bytes(part.read_bytes()[:200])
    result = run(corpusprep("validate", "pairs"), tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == "corpusprep: error: pairs: INVALID pairs directory: 1 problem (listed above)", lines
    assert lines[0].startswith(f"pairs: train/{part.name}: unreadable Parquet"), lines
    # without its manifest, what build-pairs and shard refuse is not valid either (vocab and pairs alike)
    shutil.copytree(w / "vocab", tmp_path / "bare-vocab")
    for name in ("bare-vocab", "rows"):
        (tmp_path / name / "artifact.json").unlink()
        result = run(corpusprep("validate", name), tmp_path)
        assert result.returncode == 1 and f"{name}: artifact.json: missing, so build-pairs and shard refuse" \
            in result.stderr, result
    # not an output at all: a usage error saying so
    result = run(corpusprep("validate", str(w)), tmp_path)
    assert result.returncode == 2 and "not a corpusprep output" in last_line(result)


@pytest.mark.slow  # ~1.1 s idle
def test_stats_plot_shows_every_bin_integer_shards_and_a_legend_off_the_bars():
    from corpusprep.shard.report import stats_figure

    stats = {"splits": {
        "train": {"histogram": [(1, 16, 5), (17, 32, 9), (113, 128, 40)], "shard_rows": [65, 65, 64]},
        "validation": {"histogram": [(1, 16, 1), (113, 128, 3)], "shard_rows": [9]},
    }}
    fig = stats_figure(stats)
    lengths, balance = fig.axes
    fig.canvas.draw()
    # the last bin (113-128) is drawn as a bin: its right edge is at 129, not a line at 113
    edges = [patch.get_path().vertices[:, 0].max() for patch in lengths.patches]
    assert edges and max(edges) == 129
    # shard ticks are whole numbers
    ticks = [t for t in balance.get_xticks() if balance.get_xlim()[0] <= t <= balance.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    # each legend lies outside its axes, so it covers no bar
    renderer = fig.canvas.get_renderer()
    for ax in (lengths, balance):
        legend, box = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
        assert legend.x0 >= box.x1, (legend, box)
    # splits' bars sit side by side, not on top of each other
    xs = sorted(round(bar.get_x(), 3) for bar in balance.patches)
    assert len(xs) == len(set(xs)) == 4


def test_settings_are_checked_against_the_options_types():
    from corpusprep.errors import UsageError
    from corpusprep.pair.build import PairOptions
    from corpusprep.settings import check_settings
    from corpusprep.shard.options import ShardOptions

    assert check_settings(PairOptions, {"dupe_factor": 3, "short_seq_prob": 0}, "pairs") == {
        "dupe_factor": 3, "short_seq_prob": 0.0}
    assert check_settings(ShardOptions, {"num_shards": None, "whole_word_mask": True}, "shard") == {
        "num_shards": None, "whole_word_mask": True}
    for section, message in (({"dupe_factor": "five"}, "pairs.dupe_factor: expected an integer, got 'five'"),
                             ({"dupe_factor": True}, "pairs.dupe_factor: expected an integer"),
                             ({"short_seq_prob": "0.1"}, "pairs.short_seq_prob: expected a number"),
                             ({"splitter": 3}, "pairs.splitter: expected a string"),
                             ({"dupe": 3}, "pairs.dupe: unknown setting")):
        with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
            check_settings(PairOptions, section, "pairs")
    with pytest.raises(UsageError, match="shard.num_shards: expected an integer .or leave it out., got"):
        check_settings(ShardOptions, {"num_shards": "2"}, "shard")


def test_file_paths_of_a_pipeline_are_relative_to_it_and_set_paths_to_the_current_directory(tmp_path: Path):
    from pipelines.load import load_pipeline

    (tmp_path / "pipes").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("A document.\n")
    (tmp_path / "pipes" / "p.toml").write_text('[input]\npaths = ["../data/a.txt"]\n')
    spec = load_pipeline(tmp_path / "pipes" / "p.toml")
    assert spec.config["input"]["paths"] == [str(tmp_path / "data" / "a.txt")]
    # --set values are typed at the prompt: relative to where the user is (the test's cwd: the repo)
    from corpusprep.errors import UsageError

    with pytest.raises(UsageError, match="input.paths: .*no-such: no such file"):
        load_pipeline(tmp_path / "pipes" / "p.toml", ["input.paths=['no-such']"])
    spec = load_pipeline(tmp_path / "pipes" / "p.toml", [f"input.paths=['{sys.executable}']"])
    assert spec.config["input"]["paths"] == [sys.executable]
