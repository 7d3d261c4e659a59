"""One writer per output: a second `build-pairs` or `shard` on a directory being written fails at start
(exit 2, the lock message) and leaves the first run's output exactly as an undisturbed run makes it; and no
command replaces or deletes an existing output without `--overwrite`.

The first run is frozen (SIGSTOP) while it holds the lock, so the second one meets it however fast either is.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from corpusprep.engine.lock import LOCK_NAME
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.reliability.helpers import (
    REPO,
    command,
    corpusprep,
    environment,
    error_line,
    lock_holder,
    output_files,
)

pytestmark = pytest.mark.xdist_group("concurrency")


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("concurrency")
    paths = {"root": root, "corpus": write_bert(root / "corpus.txt", synthetic_documents(300, seed=6)),
             "vocab": make_vocab(root / "vocab"), "pairs": root / "pairs"}
    done = corpusprep(*pairs_args(paths, paths["pairs"]))
    assert done.returncode == 0, done.stderr
    return paths


def pairs_args(paths: dict, out: Path, *extra: str) -> list:
    return ["build-pairs", paths["corpus"], "--vocab", paths["vocab"], "-o", out, "--input-format", "bert",
            "--workers", "1", "--dupe-factor", "2", "--docs-per-partition", "50", "--no-progress",
            *extra]


def shard_args(paths: dict, out: Path, *extra: str) -> list:
    return ["shard", paths["pairs"], "--vocab", paths["vocab"], "-o", out, "--num-shards", "3",
            "--workers", "1", "--no-progress", *extra]


def without_run_time(files: dict[str, bytes]) -> dict[str, bytes]:
    """The outputs hold no run time (stats.json, artifact.json): all bytes are compared."""
    return files


@pytest.mark.slow  # ~4.9 s idle (all cases)
@pytest.mark.parametrize("make_args", [pairs_args, shard_args], ids=["build-pairs", "shard"])
def test_second_writer_fails_at_start_and_the_first_finishes_untouched(setup, make_args, tmp_path):
    reference = tmp_path / "reference"
    done = corpusprep(*make_args(setup, reference))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    first = subprocess.Popen(command(*make_args(setup, out)), cwd=REPO, env=environment(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock_holder(out, first)
        os.kill(first.pid, signal.SIGSTOP)  # frozen with the lock held, mid-run
        before = output_files(out)
        second = corpusprep(*make_args(setup, out))
        assert second.returncode == 2
        assert error_line(second) == (f"{out}: another corpusprep run is writing here (pid {first.pid}); "
                                      "wait for it or pick another output directory")
        assert output_files(out) == before  # the second run touched nothing
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert without_run_time(output_files(out)) == without_run_time(output_files(reference))


@pytest.mark.slow  # ~2.2 s idle (all cases)
@pytest.mark.parametrize("make_args", [pairs_args, shard_args], ids=["build-pairs", "shard"])
def test_foreign_files_are_never_deleted(setup, make_args, tmp_path):
    """The same rule for every command (engine.artifact): refused; with --overwrite, written beside."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious\n")
    refused = corpusprep(*make_args(setup, out))
    assert refused.returncode == 2 and "--overwrite" in error_line(refused)
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME, "notes.txt"]
    forced = corpusprep(*make_args(setup, out, "--overwrite"))
    assert forced.returncode == 0, forced.stderr
    assert "left in place, not written by corpusprep: notes.txt" in forced.stderr
    assert (out / "notes.txt").read_text() == "precious\n"


@pytest.mark.slow  # ~3.6 s idle (all cases)
@pytest.mark.parametrize("make_args", [pairs_args, shard_args], ids=["build-pairs", "shard"])
def test_different_output_is_replaced_only_with_overwrite(setup, make_args, tmp_path):
    out = tmp_path / "out"
    assert corpusprep(*make_args(setup, out)).returncode == 0
    before = output_files(out)
    refused = corpusprep(*make_args(setup, out, "--seed", "99"))
    assert refused.returncode == 2 and "pass --overwrite" in error_line(refused)
    assert output_files(out) == before
    replaced = corpusprep(*make_args(setup, out, "--seed", "99", "--overwrite"))
    assert replaced.returncode == 0, replaced.stderr
    assert output_files(out) != before


@pytest.mark.slow  # ~1.9 s idle
def test_vocab_and_sentences_outputs_are_replaced_only_with_overwrite(setup, tmp_path):
    corpus = setup["corpus"]
    vocab = tmp_path / "vocab"
    assert corpusprep("vocab", corpus, "-o", vocab, "--vocab-size", "400").returncode == 0
    before = output_files(vocab)
    refused = corpusprep("vocab", corpus, "-o", vocab, "--vocab-size", "450")
    assert refused.returncode == 2
    message = (f"{vocab}: holds vocab built from other inputs or options (options.vocab_size: 400 -> 450); "
               "pass --overwrite to rebuild it, or pick another directory")
    assert error_line(refused) == message
    assert output_files(vocab) == before

    sentences = tmp_path / "sentences.txt"
    sentences.write_text("precious\n")
    refused = corpusprep("sentences", corpus, "-o", sentences)
    assert refused.returncode == 2
    assert error_line(refused) == f"{sentences}: already exists; pass --overwrite to replace it"
    assert sentences.read_text() == "precious\n"
    replaced = corpusprep("sentences", corpus, "-o", sentences, "--overwrite")
    assert replaced.returncode == 0 and sentences.read_text() != "precious\n"
