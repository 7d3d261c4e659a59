"""Every name in a record is a relative path that stays inside its directory: a manifest naming `/abs/...`
or `../...`, or a symbolic link inside an output, never causes a read, a write or a deletion outside it. And
stale-temp cleanup removes only an output's own temporary names, where it writes them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from corpusprep.engine.files import write_json
from tests.security.trust_world import (
    copy,
    corpusprep,
    pipeline,
    pipeline_args,
    rewrite,
    train_args,
    trainer_run,
    tree_digest,
)


def victims(tmp_path: Path) -> tuple[Path, Path]:
    """Two files outside the output: one named by an absolute path, one by `../`."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("not corpusprep's\n")
    (tmp_path / "victim.txt").write_text("not corpusprep's either\n")
    return outside / "victim.txt", tmp_path / "victim.txt"


def one_line(result, *fragments: str) -> str:
    assert result.code in (1, 2), (result.code, result.out[-300:], result.err)
    errors = [line for line in result.err.splitlines() if line.startswith("corpusprep: error: ")]
    assert len(errors) == 1 and errors[0] == result.line, result.err
    for fragment in fragments:  # in the error line (validate: in the problems it lists above it)
        assert fragment in result.err, result.err
    return result.line


def name_outside(manifest: Path, names: list[str], victim_size: int) -> None:
    """List `names` among the files an artifact owns, recorded with the victim's size and another sha256 (as
    if it had been edited in place: a rerun would "rebuild" it)."""
    record = json.loads(manifest.read_text())
    for name in names:
        record["files"][name] = {"size": victim_size, "sha256": "0" * 64}
    write_json(manifest, record)


def test_a_vocab_manifest_naming_files_outside_changes_nothing_outside(outputs, tmp_path):
    absolute, parent = victims(tmp_path)
    vocab = copy(outputs.vocab, tmp_path / "vocab")
    name_outside(vocab / "artifact.json", [str(absolute), "../victim.txt"], absolute.stat().st_size)
    before = tree_digest(tmp_path, skip=vocab)
    args = ["vocab", outputs.text, "-o", vocab, "--vocab-size", "800"]
    line = one_line(corpusprep(*args), "artifact.json: files[", "not a relative path inside the directory")
    assert "victim" in line
    one_line(corpusprep("build-pairs", outputs.text, "--vocab", vocab, "-o", tmp_path / "pairs"), "files[")
    one_line(corpusprep("validate", vocab), "INVALID")
    assert corpusprep(*args, "--overwrite").code == 0  # rebuilt: a damaged manifest owns nothing
    assert tree_digest(tmp_path, skip=vocab) == before  # the victims, and everything else outside


def test_shard_paths_outside_the_directory_are_never_followed(outputs, tmp_path):
    absolute, _ = victims(tmp_path)
    for name in (str(absolute), "../victim.txt", "train/../../victim.txt"):
        shards = copy(outputs.shards, tmp_path / f"shards-{len(name)}")
        manifest = json.loads((shards / "manifest.json").read_text())
        manifest["splits"]["train"]["shards"][0]["path"] = name
        rewrite(shards, "manifest.json", manifest)
        field = 'splits["train"].shards[0].path'
        for args in (["validate", shards], ["stats", shards], ["inspect", shards, "-n", "1"]):
            one_line(corpusprep(*args), field, "not a relative path inside the directory")
        result = trainer_run(*train_args(shards, tmp_path / f"run-{len(name)}", 1))
        assert result.code == 1 and field in result.line, result.err


def test_a_linked_folder_inside_an_output_is_never_written_or_deleted_through(outputs, tmp_path):
    """pairs/train -> a folder elsewhere: a rerun with --overwrite would delete and write there."""
    pairs = copy(outputs.pairs, tmp_path / "pairs")
    elsewhere = copy(pairs / "train", tmp_path / "elsewhere")
    for path in (pairs / "train").iterdir():
        path.unlink()
    (pairs / "train").rmdir()
    (pairs / "train").symlink_to(elsewhere)
    before = tree_digest(elsewhere)
    args = ["build-pairs", outputs.text, "--vocab", outputs.vocab, "-o", pairs, "--max-seq-length", "64",
            "--dupe-factor", "1", "--validation-fraction", "0.2", "--seed", "0", "--no-progress"]
    for extra in ([], ["--overwrite"], ["--dupe-factor", "2", "--overwrite"]):
        one_line(corpusprep(*args, *extra), "symbolic link")
    one_line(corpusprep("shard", pairs, "--vocab", outputs.vocab, "-o", tmp_path / "shards"), "symbolic link")
    assert tree_digest(elsewhere) == before


def test_stale_temps_of_the_user_survive(outputs, tmp_path):
    """Names shaped like a killed write's temporaries, but the user's: in a folder `--overwrite` leaves in
    place beside an output, and in a trainer's existing run dir. Only the output's own temporaries go."""
    vocab = tmp_path / "vocab"
    mine = vocab / "notes" / "deep" / ".draft.txt.tmp-1"
    mine.parent.mkdir(parents=True)
    mine.write_text("the user's")
    (vocab / ".keep.tmp-2").mkdir()
    ours = vocab / f".vocab.txt.tmp-{2**22 + 1}"  # a killed vocab write (no such process)
    ours.write_text("partial")
    result = corpusprep("vocab", outputs.text, "-o", vocab, "--vocab-size", "800", "--overwrite")
    assert result.code == 0, result.err
    assert mine.read_text() == "the user's" and (vocab / ".keep.tmp-2").is_dir() and not ours.exists()

    run = copy(outputs.run, tmp_path / "run")
    theirs = run / "notes" / ".checkpoints.tmp-3"
    theirs.parent.mkdir()
    theirs.write_text("the user's")
    killed = run / "checkpoints" / f".step-0000003.tmp-{2**22 + 1}"  # a killed checkpoint write
    killed.mkdir()
    assert trainer_run(*train_args(outputs.shards, run, 3), "--resume").code == 0
    assert theirs.read_text() == "the user's" and not killed.exists()


def test_a_pipeline_stage_record_naming_files_outside_changes_nothing(tmp_path):
    """The runner's record of a stage's outputs is read through the same loader and `inside`."""
    from pipelines.runner import _record, outputs_intact

    absolute, _ = victims(tmp_path)
    stages = tmp_path / "run" / "stages"
    stages.mkdir(parents=True)
    record = {"stage": "vocab", "kind": "vocab", "phase": None, "fingerprint": "f", "settings": {},
              "inputs": {}, "output": "vocab", "outputs": {str(absolute): 10}, "counts": {}, "unit": None,
              "seconds": 1.0, "engine": "local", "finished": "now"}
    write_json(stages / "vocab.done.json", record)
    with pytest.raises(Exception, match=r'outputs\[".*victim.txt"\]: not a relative path inside'):
        _record(stages / "vocab.done.json", "stage_done")
    with pytest.raises(Exception, match="not a relative path inside"):
        outputs_intact(tmp_path / "run" / "vocab", {"../../outside/victim.txt": 10})
    assert os.path.exists(absolute)


def test_pipeline_repair_never_deletes_a_file_a_manifest_names_outside(outputs, tmp_path_factory, tmp_path):
    run_dir = copy(pipeline(tmp_path_factory, outputs), tmp_path / "run")
    absolute, parent = victims(tmp_path)
    (run_dir / "pairs" / "stats.json").unlink()  # a lost file: the pipeline repairs the pairs stage
    name_outside(run_dir / "pairs" / "artifact.json", [str(absolute), "../../victim.txt"],
                 absolute.stat().st_size)
    before = tree_digest(tmp_path, skip=run_dir)
    one_line(corpusprep(*pipeline_args(run_dir, outputs.text, "--until", "train")), "not a relative path")
    assert tree_digest(tmp_path, skip=run_dir) == before
