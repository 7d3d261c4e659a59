"""Where `trainer.export` and `trainer.import_hf` write: the artifact protocol's ownership rules. An output
overlapping an input is refused before anything is touched; `--overwrite` replaces only the files the
command writes; a directory holding config.json holds a complete output, whatever killed a write."""

from __future__ import annotations

import os
import random
import signal
import sys
from pathlib import Path

import pytest

from tests.interop.helpers import one_thread, random_model, write_checkpoint, write_vocab
from trainer import export as ex
from trainer.config import preset
from trainer.import_hf import main as import_main

FILES = set(ex.EXPORT_FILES)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def make_run(root: Path, max_position: int = 64, seed: int = 0) -> tuple[Path, Path, Path]:
    """(run dir, its one checkpoint, vocab dir): the layout the trainer writes, a tiny random model."""
    config = preset("tiny", vocab_size=300, hidden_size=32, num_heads=4, max_position=max_position)
    run = root / "run"
    ckpt = write_checkpoint(run / "checkpoints" / "step-0000001", random_model(config, seed))
    for name in ("trainer.safetensors", "trainer.json"):  # what export never reads
        (ckpt / name).write_bytes(b"x")
    return run, ckpt, write_vocab(root / "vocab", 300)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def export_main(*argv: str | Path) -> int:
    return ex.main([str(a) for a in argv])


def test_an_output_overlapping_an_input_is_refused_before_anything_is_touched(tmp_path, capsys, monkeypatch):
    run, ckpt, vocab = make_run(tmp_path)
    before = tree(tmp_path)
    for out in (run, ckpt, ckpt / "hf", run / "hf", run / "checkpoints", vocab, vocab / "hf", tmp_path):
        assert export_main(run, out, "--vocab", vocab, "--overwrite") == 2, out
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "overlap" in err, err
    monkeypatch.chdir(run / "checkpoints")
    assert export_main(run, "..", "--vocab", vocab, "--overwrite") == 2  # `-o ..`: the run dir
    monkeypatch.chdir(ckpt)
    assert export_main(".", ".", "--vocab", vocab, "--overwrite") == 2  # `-o .`: the checkpoint
    assert "overlap" in capsys.readouterr().err
    assert tree(tmp_path) == before


def test_files_it_does_not_write_are_kept_and_mentioned(tmp_path, capsys):
    run, _, vocab = make_run(tmp_path)
    out = tmp_path / "mine"
    (out / "notes").mkdir(parents=True)
    (out / "keep.txt").write_text("mine")
    (out / "notes" / "a.md").write_text("a")
    assert export_main(run, out, "--vocab", vocab) == 2
    assert "pass --overwrite to write beside them" in capsys.readouterr().err
    assert set(tree(out)) == {"keep.txt", "notes/a.md"}
    for _ in range(2):  # a first export beside them, then one replacing it
        assert export_main(run, out, "--vocab", vocab, "--overwrite") == 0
        assert "left in place, not written by trainer.export: keep.txt, notes" in capsys.readouterr().err
        assert set(tree(out)) == FILES | {"keep.txt", "notes/a.md"}
        assert (out / "keep.txt").read_text() == "mine"
    assert export_main(run, out, "--vocab", vocab) == 2  # an earlier export: replaced only when asked
    assert "holds an earlier trainer.export output; pass --overwrite" in capsys.readouterr().err


def test_a_file_named_like_its_output_that_it_did_not_write_is_never_replaced(tmp_path, capsys):
    run, _, vocab = make_run(tmp_path)
    out = tmp_path / "project"
    out.mkdir()
    (out / "config.json").write_text('{"mine": true}')
    assert export_main(run, out, "--vocab", vocab, "--overwrite") == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "named like trainer.export output" in err
    assert tree(out) == {"config.json": b'{"mine": true}'}


def test_dot_and_an_empty_directory_are_fine_outputs(tmp_path, monkeypatch):
    run, _, vocab = make_run(tmp_path)
    (tmp_path / "hf").mkdir()
    monkeypatch.chdir(tmp_path / "hf")
    assert export_main(run, ".", "--vocab", vocab, "--overwrite") == 0  # was: "has an empty name"
    assert export_main(run, ".", "--vocab", vocab, "--overwrite") == 0
    assert set(tree(tmp_path / "hf")) == FILES


def test_import_follows_the_same_rules(tmp_path, capsys):
    run, _, vocab = make_run(tmp_path)
    hf = tmp_path / "hf"
    assert export_main(run, hf, "--vocab", vocab) == 0
    before = tree(hf)
    for out in (hf, hf / "init", tmp_path):
        assert import_main([str(hf), str(out), "--overwrite"]) == 2
        assert "overlap" in capsys.readouterr().err
    assert tree(hf) == before
    init = tmp_path / "init"
    init.mkdir()
    (init / "keep.txt").write_text("mine")
    assert import_main([str(hf), str(init)]) == 2
    for _ in range(2):
        assert import_main([str(hf), str(init), "--overwrite"]) == 0
        assert (init / "keep.txt").read_text() == "mine"
        assert {"weights.safetensors", "config.json", "vocab/vocab.txt"} <= set(tree(init))
    # an import output is a model checkpoint, not an export: export never writes into it
    assert export_main(run, init, "--vocab", vocab, "--overwrite") == 2
    assert "is a model checkpoint" in capsys.readouterr().err


def test_another_commands_output_is_never_written_into_even_with_overwrite(tmp_path, capsys):
    """Not an input, so not an overlap: a copy of a training run, its checkpoints, a pipeline run, an
    artifact (shards, say) and directories inside them. Refused like another kind by every stage."""
    run, _, vocab = make_run(tmp_path)
    other_run, _, _ = make_run(tmp_path / "other")
    pipeline = tmp_path / "runs" / "demo"
    (pipeline / "stages").mkdir(parents=True)
    (pipeline / "pipeline.json").write_text("{}")
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "artifact.json").write_text("{}")
    hf = tmp_path / "hf"
    assert export_main(run, hf, "--vocab", vocab) == 0
    before = tree(tmp_path)
    outputs = (other_run, other_run / "checkpoints", other_run / "hf", pipeline, pipeline / "stages",
               pipeline / "hf", shards, shards / "hf")  # fmt: skip
    for out in outputs:
        assert export_main(run, out, "--vocab", vocab, "--overwrite") == 2, out
        assert import_main([str(hf), str(out), "--overwrite"]) == 2, out
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 2 and all("never written into, even with --overwrite" in line for line in err), err
    assert tree(tmp_path) == before
    # an earlier export that has become a training run too (a run copied over it) is not ours to replace
    write_checkpoint(hf / "checkpoints" / "step-0000001", random_model(preset("tiny", vocab_size=300,
                     hidden_size=32, num_heads=4, max_position=64)))  # fmt: skip
    assert export_main(run, hf, "--vocab", vocab, "--overwrite") == 2
    assert "is a training run" in capsys.readouterr().err


def _export_killed_at(run: Path, vocab: Path, out: Path, overwrite: bool, kill_at: int | None) -> int:
    """Export in a forked child SIGKILLed at its `kill_at`-th fsync or rename (None: not killed); its
    exit status, -9 when killed."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            calls = [0]

            def fatal(real):
                def call(*args, **kwargs):
                    calls[0] += 1
                    if calls[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return real(*args, **kwargs)

                return call

            os.replace, os.fsync = fatal(os.replace), fatal(os.fsync)
            sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the child ends with os._exit)
            code = export_main(run, out, "--vocab", vocab, *(["--overwrite"] if overwrite else []))
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


@pytest.mark.slow  # ~4.4 s idle
def test_exports_overwrites_and_kills_in_any_order_leave_a_complete_export_or_none(tmp_path):
    """Two models (config.json differs too); each round exports one of them, with or without --overwrite,
    killed at a random fsync or rename or not at all. After every round: the user's file is intact, and
    config.json present means every file is exactly one model's export."""
    runs = [make_run(tmp_path / "a", max_position=64), make_run(tmp_path / "b", max_position=32, seed=1)]
    reference = []
    for i, (run, _, vocab) in enumerate(runs):
        assert export_main(run, tmp_path / f"ref{i}", "--vocab", vocab) == 0
        reference.append(tree(tmp_path / f"ref{i}"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    rng = random.Random(0)
    finished = None  # which model the directory holds when complete
    outcomes = []
    for _ in range(30):
        which, overwrite = rng.randrange(2), rng.random() < 0.8
        kill_at = rng.choice(range(1, 15)) if rng.random() < 0.6 else None  # 13 fsyncs and renames
        run, _, vocab = runs[which]
        code = _export_killed_at(run, vocab, out, overwrite, kill_at)
        outcomes.append(code)
        files = tree(out)
        assert files.pop("keep.txt") == b"mine"
        owned = {k: v for k, v in files.items() if not k.startswith(".")}
        if code == 0:
            assert owned == reference[which]
            finished = which
        elif code == 2:  # refused: no --overwrite; nothing changed
            assert not overwrite and (finished is None or owned == reference[finished])
        else:
            assert code == -signal.SIGKILL
            if "config.json" in owned:  # killed before the commit started, or after it ended
                assert owned in reference
                finished = reference.index(owned)
            else:
                finished = None
    assert {0, 2, -signal.SIGKILL} <= set(outcomes), outcomes


def test_a_folder_that_only_looks_like_an_output_above_the_output_is_fine(tmp_path):
    """The directories above an export are judged by strict signs: a home directory with a `checkpoints/`
    folder, a `stages/` folder or a `model.pt` of its own holds no training run, pipeline or checkpoint."""
    run, _, vocab = make_run(tmp_path / "a")
    home = tmp_path / "home"
    for name in ("checkpoints", "stages"):
        (home / name).mkdir(parents=True)
    (home / "model.pt").write_bytes(b"mine")
    assert export_main(run, home / "hf", "--vocab", vocab) == 0
    assert set(tree(home / "hf")) == FILES
