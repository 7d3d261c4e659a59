"""One artifact protocol for every output directory (`corpusprep.engine.artifact`), tried as a careless user
would: nothing lost, nothing stale, never stuck, foreign files never deleted, no orphan workers.

Each test is one kind of failure that broke before the protocol; the last one chains random faults.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpusprep.engine import faults
from corpusprep.engine.manifest import MANIFEST
from corpusprep.engine.rng import rng_for
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.pipelines.helpers import group_alive
from tests.reliability.helpers import REPO, command, corpusprep, environment, error_line, output_files

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("artifact_protocol")]


@pytest.fixture(scope="module")
def vocab(tmp_path_factory) -> Path:
    return make_vocab(tmp_path_factory.mktemp("vocab") / "vocab")


def corpus(path: Path, docs: int = 240, seed: int = 4) -> Path:
    return write_bert(path, synthetic_documents(docs, seed=seed))


def pairs(corpus_path, vocab, out, *extra) -> subprocess.CompletedProcess:
    return corpusprep("build-pairs", corpus_path, "--vocab", vocab, "-o", out, "--input-format", "bert",
                      "--workers", "1", "--dupe-factor", "2", "--docs-per-partition", "40", "--no-progress",
                      *extra)


def shards(pairs_dir, vocab, out, *extra) -> subprocess.CompletedProcess:
    return corpusprep("shard", pairs_dir, "--vocab", vocab, "-o", out, "--num-shards", "3", "--workers", "1",
                      "--no-progress", *extra)


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result


def parquet_bytes(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*.parquet"))}


def mtimes(directory: Path) -> dict[str, int]:
    return {p.relative_to(directory).as_posix(): p.stat().st_mtime_ns for p in directory.rglob("*.parquet")}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, vocab) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("reference")
    text = corpus(root / "corpus.txt")
    ok(pairs(text, vocab, root / "pairs"))
    ok(shards(root / "pairs", vocab, root / "shards"))
    return text, root / "pairs", root / "shards"


# --- data destroyed ---------------------------------------------------------------------------------------


def test_overwrite_removes_only_owned_files(reference, vocab, tmp_path):
    text, _, _ = reference
    out = tmp_path / "pairs"
    ok(pairs(text, vocab, out))
    (out / "notes.txt").write_text("mine")
    (out / "train" / "keep.parquet").write_bytes(b"not ours")
    (out / "train" / "part-00099-d0.parquet").write_bytes(b"named like ours")
    refused = pairs(text, vocab, out, "--seed", "7")
    assert refused.returncode == 2 and "options.seed: 12345 -> 7" in error_line(refused)
    rebuilt = ok(pairs(text, vocab, out, "--seed", "7", "--overwrite"))
    assert "left in place, not written by corpusprep: notes.txt" in rebuilt.stderr
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "train" / "keep.parquet").read_bytes() == b"not ours"
    assert (out / "train" / "part-00099-d0.parquet").read_bytes() == b"named like ours"
    shards_out = tmp_path / "shards"
    ok(shards(out, vocab, shards_out))
    (shards_out / "train" / "mine.txt").write_text("mine")
    ok(shards(out, vocab, shards_out, "--seed", "3", "--overwrite"))
    assert (shards_out / "train" / "mine.txt").read_text() == "mine"


def test_a_foreign_file_at_an_output_name_is_never_written_over(reference, vocab, tmp_path):
    text = reference[0]
    out = tmp_path / "pairs"
    (out / "train").mkdir(parents=True)
    (out / "train" / "part-00000-d0.parquet").write_text("MY PRECIOUS")
    for extra in ((), ("--overwrite",), ()):  # a refused --overwrite leaves nothing a rerun would resume
        refused = pairs(text, vocab, out, *extra)
        assert refused.returncode == 2, refused.stderr
    assert "no corpusprep manifest owns it" in error_line(refused)
    assert (out / "train" / "part-00000-d0.parquet").read_text() == "MY PRECIOUS"
    (out / "train" / "part-00000-d0.parquet").rename(out / "train" / "mine.txt")
    ok(pairs(text, vocab, out, "--overwrite"))
    (out / MANIFEST).unlink()  # a finished build whose manifest was lost: its files are nobody's now
    refused = pairs(text, vocab, out, "--overwrite")
    assert refused.returncode == 2 and "no corpusprep manifest owns it" in error_line(refused)
    (out / MANIFEST).write_text("{not json")  # a damaged manifest: the directory is ours, rebuilt on request
    refused = pairs(text, vocab, out)
    assert refused.returncode == 2 and "damaged" in error_line(refused)
    ok(pairs(text, vocab, out, "--overwrite"))
    assert (out / "train" / "mine.txt").read_text() == "MY PRECIOUS"


def test_shard_never_touches_its_input_or_another_kind(reference, vocab, tmp_path):
    _, pairs_dir, _ = reference
    before = parquet_bytes(pairs_dir)
    refused = shards(pairs_dir, vocab, pairs_dir, "--overwrite")
    assert refused.returncode == 2 and "overlap" in error_line(refused)
    refused = shards(pairs_dir, vocab, pairs_dir / "shards", "--overwrite")
    assert refused.returncode == 2 and "overlap" in error_line(refused)
    other = tmp_path / "other-pairs"
    ok(pairs(reference[0], vocab, other))
    refused = shards(pairs_dir, vocab, other, "--overwrite")
    assert refused.returncode == 2 and "holds pairs, not shards" in error_line(refused)
    assert parquet_bytes(pairs_dir) == before and parquet_bytes(other) == before


def pipeline_run_dir(path: Path) -> Path:
    """What `corpusprep run` leaves in a run dir before its first stage's output (pipelines/runner.py)."""
    (path / "stages").mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"pipeline": "demo", "source": "pipelines/demo.toml"}))
    (path / "pipeline.json").write_text("{}")
    return path


def trainer_run_dir(path: Path) -> Path:
    """What `python -m trainer.run` leaves in its run dir (trainer/train.py, trainer/checkpoint.py)."""
    step = path / "checkpoints" / "step-0000010"
    step.mkdir(parents=True)
    for name in ("model.pt", "config.json"):
        (step / name).write_bytes(b"weights")
    (path / "metrics.jsonl").write_text('{"step": 10}\n')
    return path


def test_pipeline_and_trainer_run_dirs_are_another_kind_even_with_overwrite(reference, vocab, tmp_path):
    text, pairs_dir, _ = reference
    for kind, make in (("a pipeline run", pipeline_run_dir), ("a training run", trainer_run_dir)):
        target = make(tmp_path / kind.replace(" ", "-"))
        before = output_files(target)
        for result in (
            corpusprep("vocab", "--from-vocab", vocab / "vocab.txt", "-o", target, "--overwrite"),
            pairs(text, vocab, target, "--overwrite"),
            shards(pairs_dir, vocab, target, "--overwrite"),
        ):
            assert result.returncode == 2 and f"holds {kind}, not " in error_line(result)
        assert output_files(target) == before  # nothing written beside, nothing removed
    trainer = tmp_path / "a-training-run"
    refused = corpusprep("run", REPO / "pipelines" / "demo.toml", "--run-dir", trainer, "--overwrite")
    assert refused.returncode == 2 and "holds a training run, not a pipeline run" in error_line(refused)


def test_an_output_inside_another_is_refused_but_a_running_pipelines_stages(reference, vocab, tmp_path):
    text, pairs_dir, _ = reference
    run = trainer_run_dir(tmp_path / "run")
    other_pairs = tmp_path / "other-pairs"
    ok(pairs(text, vocab, other_pairs))
    for parent, kind in ((run, "a training run"), (run / "checkpoints", "a training run"),
                         (other_pairs, "corpusprep pairs"), (pairs_dir, "corpusprep pairs")):
        before = output_files(tmp_path)
        for result in (
            corpusprep("vocab", "--from-vocab", vocab / "vocab.txt", "-o", parent / "vocab", "--overwrite"),
            shards(pairs_dir, vocab, parent / "train" / "shards", "--overwrite"),
        ):
            line = error_line(result)
            assert result.returncode == 2 and (f"is inside {kind}" in line or "overlap" in line), line
        assert output_files(tmp_path) == before and not (parent / "vocab").exists()  # nothing made or lost
    # a pipeline's stages are written inside its run dir, by the pipeline only
    pipeline = pipeline_run_dir(tmp_path / "pipeline")
    google = vocab / "vocab.txt"
    refused = corpusprep("vocab", "--from-vocab", google, "-o", pipeline / "vocab", "--overwrite")
    assert refused.returncode == 2 and "is inside a pipeline run" in error_line(refused)
    from corpusprep.engine.placement import pipeline_stages
    from corpusprep.tokenize.vocab import vocab_from_file

    with pipeline_stages(pipeline):
        vocab_from_file(vocab / "vocab.txt", pipeline / "vocab")
    # a pipeline or training run started inside another output: refused, and no directory is left
    for run_dir in (other_pairs / "p", run / "checkpoints" / "step-0000010" / "p", pipeline / "nested"):
        refused = corpusprep("run", REPO / "pipelines/demo.toml", "--run-dir", run_dir, "--until", "corpus")
        assert refused.returncode == 2 and "inside" in error_line(refused) and not run_dir.exists()
    shard_dir = tmp_path / "shards"
    ok(shards(pairs_dir, vocab, shard_dir))
    trainer = [sys.executable, "-m", "trainer.run", "--shards", str(shard_dir), "--run-dir",
               str(run / "checkpoints" / "new"), "--steps", "1", "--device", "cpu"]
    refused = subprocess.run(trainer, cwd=REPO, env=environment(), capture_output=True, text=True)
    assert refused.returncode == 2 and "inside a training run" in refused.stderr, refused.stderr
    assert not (run / "checkpoints" / "new").exists()
    # a pipeline's train stage started by hand (torchrun ... -m trainer.run RUN_DIR/train.toml) may run there
    trainer[trainer.index("--run-dir") + 1] = str(pipeline / "train")
    done = subprocess.run([*trainer, "--batch-size", "2", "--eval-every", "0"], cwd=REPO, env=environment(),
                          capture_output=True, text=True)
    assert done.returncode == 0 and (pipeline / "train" / "checkpoints").is_dir(), done.stderr


# --- data lost silently -------------------------------------------------------------------------------


def test_a_lost_or_truncated_pairs_file_is_refused_downstream_and_repaired(reference, vocab, tmp_path):
    text, ref_pairs, ref_shards = reference
    out = tmp_path / "pairs"
    ok(pairs(text, vocab, out))
    victims = sorted(out.glob("train/*.parquet"))
    victims[1].unlink()
    with open(victims[2], "r+b") as f:
        f.truncate(100)
    refused = shards(out, vocab, tmp_path / "shards")
    assert refused.returncode == 1 and victims[1].name in error_line(refused)
    before = mtimes(out)
    repaired = ok(pairs(text, vocab, out))
    assert "2 file(s) missing or changed" in repaired.stderr
    assert parquet_bytes(out) == parquet_bytes(ref_pairs)
    touched = {name for name, t in mtimes(out).items() if before.get(name) != t}
    assert touched == {f"train/{victims[1].name}", f"train/{victims[2].name}"}  # task granularity
    ok(shards(out, vocab, tmp_path / "shards"))
    assert parquet_bytes(tmp_path / "shards") == parquet_bytes(ref_shards)


def flip_byte(path: Path, offset: int | None = None) -> None:
    """Change one byte in place: same size, so only the content (sha256) tells."""
    data = bytearray(path.read_bytes())
    offset = len(data) // 2 if offset is None else offset
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_pairs_file_changed_in_place_is_refused_by_shard(reference, vocab, tmp_path):
    _, ref_pairs, _ = reference
    for victim in ("train/part-00001-d0.parquet", "stats.json"):
        copy = tmp_path / f"pairs-{Path(victim).stem}"
        subprocess.run(["cp", "-r", str(ref_pairs), str(copy)], check=True)
        flip_byte(copy / victim, 1 if victim == "stats.json" else None)
        refused = shards(copy, vocab, tmp_path / f"shards-{Path(victim).stem}")
        line = error_line(refused)
        assert refused.returncode == 1 and f"{copy / victim}: content differs" in line, line
        assert "delete it and rerun" in line


def test_a_damaged_vocab_is_refused_by_the_stages_that_read_it(reference, vocab, tmp_path):
    text, ref_pairs, _ = reference
    damages = {  # damage -> what the one line says
        "appended": (lambda d: (d / "vocab.txt").write_text((d / "vocab.txt").read_text() + "extra\n"),
                     "bytes, manifest says"),
        "edited": (lambda d: flip_byte(d / "vocab.txt", len((d / "vocab.txt").read_bytes()) - 3),
                   "vocab.txt: content differs"),
        "tokenizer": (lambda d: flip_byte(d / "tokenizer.json"), "tokenizer.json: content differs"),
        "no manifest": (lambda d: (d / MANIFEST).unlink(), f"no {MANIFEST}"),
    }
    for name, (damage, says) in damages.items():
        copy = tmp_path / name.replace(" ", "-")
        subprocess.run(["cp", "-r", str(vocab), str(copy)], check=True)
        damage(copy)
        for result in (pairs(text, copy, tmp_path / "out-pairs"), shards(ref_pairs, copy, tmp_path / "out")):
            line = error_line(result)
            assert result.returncode in (1, 2) and str(copy) in line, (name, line)
            assert says in line, (name, line)
        assert not (tmp_path / "out-pairs").exists() and not (tmp_path / "out").exists()


def test_an_input_path_with_glob_characters_is_taken_literally(vocab, tmp_path):
    weird = tmp_path / "corpus[1]"  # as a glob: `corpus1`, whose directory part holds the outputs
    weird.mkdir()
    corpus(weird / "text?.txt")
    ok(pairs(weird / "text?.txt", vocab, tmp_path / "pairs"))
    ok(pairs(weird, vocab, tmp_path / "pairs-from-dir"))


def test_validate_finds_shards_that_lost_pairs(reference, vocab, tmp_path):
    _, _, ref_shards = reference
    copy = tmp_path / "shards"
    subprocess.run(["cp", "-r", str(ref_shards), str(copy)], check=True)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["pairs_stats"]["splits"]["train"]["pairs"] += 5  # the pairs promised more than the shards hold
    (copy / "manifest.json").write_text(json.dumps(manifest))
    result = corpusprep("validate", copy)
    assert result.returncode == 1
    assert "examples, the pairs' stats.json promises" in result.stdout + result.stderr


# --- stale output -------------------------------------------------------------------------------------


def test_edited_appended_or_added_inputs_are_never_skipped(vocab, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    corpus(data / "a.txt", docs=120, seed=1)
    out = tmp_path / "pairs"
    ok(pairs(data, vocab, out))
    with open(data / "a.txt", "a") as f:
        f.write("\nAnother document. With two sentences.\n")
    refused = pairs(data, vocab, out)
    assert refused.returncode == 2 and "a.txt: modified" in error_line(refused)
    corpus(data / "b.txt", docs=120, seed=2)
    refused = pairs(data, vocab, out)
    assert refused.returncode == 2 and "b.txt: added" in error_line(refused)
    ok(pairs(data, vocab, out, "--overwrite"))
    clean = tmp_path / "clean"
    ok(pairs(data, vocab, clean))
    assert parquet_bytes(out) == parquet_bytes(clean)
    vocab_out = tmp_path / "vocab"
    ok(corpusprep("vocab", data, "-o", vocab_out, "--vocab-size", "300", "--input-format", "bert"))
    (data / "b.txt").unlink()
    refused = corpusprep("vocab", data, "-o", vocab_out, "--vocab-size", "300", "--input-format", "bert")
    assert refused.returncode == 2 and "b.txt: removed" in error_line(refused)


# --- output inside input ------------------------------------------------------------------------------


def test_output_inside_the_input_is_refused_and_outputs_are_never_read_as_corpus(vocab, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    corpus(data / "a.txt", docs=120, seed=1)
    attempts = [["build-pairs", data, "--vocab", vocab, "-o", data / "pairs"],
                ["vocab", data, "-o", data / "vocab"], ["vocab", data / "a.txt", "-o", tmp_path]]
    for args in attempts:
        refused = corpusprep(*args, "--no-progress") if args[0] == "build-pairs" else corpusprep(*args)
        assert refused.returncode == 2 and "overlap" in error_line(refused), args
        assert sorted(p.name for p in data.iterdir()) == ["a.txt"]
    # A pairs directory dropped into the corpus is skipped: same pairs with or without it.
    ok(pairs(data / "a.txt", vocab, tmp_path / "before"))
    subprocess.run(["cp", "-r", str(tmp_path / "before"), str(data / "old-pairs")], check=True)
    ok(pairs(data, vocab, tmp_path / "after"))
    assert parquet_bytes(tmp_path / "after") == parquet_bytes(tmp_path / "before")


def test_killed_between_the_manifest_and_the_cleanup(reference, vocab, tmp_path):
    """The window that once left `_work/` files in a finished output: the rerun cleans it up."""
    text, ref_pairs, _ = reference
    out = tmp_path / "pairs"
    env_kill = faults.spec("artifact_committed", 1)
    args = ["build-pairs", text, "--vocab", vocab, "-o", out, "--input-format", "bert", "--workers", "1",
            "--dupe-factor", "2", "--docs-per-partition", "40", "--no-progress"]
    died = subprocess.run(command(*args), cwd=REPO, env={**environment(), **env_kill}, capture_output=True)
    assert died.returncode == -signal.SIGKILL and (out / ".work").is_dir() and (out / MANIFEST).is_file()
    again = ok(pairs(text, vocab, out))
    assert "nothing to do" in again.stderr + again.stdout
    assert not (out / ".work").exists() and output_files(out) == output_files(ref_pairs)


# --- orphans ------------------------------------------------------------------------------------------


def test_workers_die_with_a_parent_killed_as_the_pool_starts(reference, vocab, tmp_path):
    text = reference[0]
    for attempt in range(3):  # the kill lands while the workers are still booting
        args = ["build-pairs", text, "--vocab", vocab, "-o", tmp_path / f"p{attempt}", "--input-format",
                "bert", "--workers", "2", "--docs-per-partition", "40", "--no-progress"]
        env = {**environment(), **faults.spec("pool_started", 1)}
        proc = subprocess.Popen(command(*args), cwd=REPO, env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert proc.wait(timeout=120) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        alive = group_alive(proc.pid)
        if alive:
            os.killpg(proc.pid, signal.SIGKILL)
        assert not alive, "pool workers outlived their parent"


# --- stuck --------------------------------------------------------------------------------------------


def test_checkpoint_write_failures_leave_the_previous_checkpoint_usable(tmp_path, monkeypatch):
    import safetensors.torch
    import torch

    from trainer import checkpoint

    trainer = {"step": 4, "data": {"epoch": 0, "examples": 4}, "last_metrics": {},
               "rng": [{"cpu": torch.get_rng_state(), "cuda": None}]}
    state = {"model": {"w": torch.ones(1000)}, "optimizer": {"state": {}, "param_groups": [{"params": []}]},
             "scheduler": {}, "trainer": trainer}
    checkpoint.save(tmp_path, 4, state, {"model": {}}, keep=3)
    real = safetensors.torch.save_file

    def disk_full(tensors, path, *args, **kwargs):
        real(tensors, path, *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safetensors.torch, "save_file", disk_full)
    with pytest.raises(OSError, match="No space"):
        checkpoint.save(tmp_path, 8, state | {"trainer": trainer | {"step": 8}}, {"model": {}}, keep=3)
    monkeypatch.setattr(safetensors.torch, "save_file", real)
    assert [step for step, _ in checkpoint.list_checkpoints(tmp_path)] == [4]
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-0000004"]
    assert checkpoint.load(checkpoint.latest(tmp_path), "trainer")["step"] == 4
    # A killed write leaves a temp directory: the next start removes it (directories, not only files).
    stale = tmp_path / "checkpoints" / ".step-0000008.tmp-123"
    stale.mkdir()
    (stale / "weights.safetensors").write_bytes(b"half")
    assert checkpoint.remove_partial(tmp_path) == 1 and not stale.exists()


def pipeline_args(run_dir: Path, corpus_path: Path, vocab_txt: Path, *extra: str) -> list:
    sets = [f"input.paths=['{corpus_path}']", "input.format='bert'", f"vocab.from_vocab='{vocab_txt}'",
            "pairs.docs_per_partition=40", "pairs.dupe_factor=2", "shard.num_shards=3",
            "train.model.preset='tiny'", "train.schedule.steps=4", "train.schedule.warmup_steps=1",
            "train.checkpoint.every=2", "train.eval.every=2", "train.eval.max_batches=1",
            "train.data.batch_size=8"]
    args = ["run", REPO / "pipelines" / "demo.toml", "--run-dir", run_dir, "--no-progress", "--workers", "1"]
    return command(*args, *[a for s in sets for a in ("--set", s)], *extra)


def run_pipeline(run_dir: Path, corpus_path: Path, vocab_txt: Path, *extra: str, env: dict | None = None):
    done = subprocess.run(pipeline_args(run_dir, corpus_path, vocab_txt, *extra), cwd=REPO,
                          env={**environment(), **(env or {})}, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_pipeline_repairs_lost_files_and_resumes_a_killed_checkpoint(reference, vocab, tmp_path):
    text = reference[0]
    run_dir = tmp_path / "run"
    killed = run_pipeline(run_dir, text, vocab / "vocab.txt", env=faults.spec("checkpoint_file", 5))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    ok(run_pipeline(run_dir, text, vocab / "vocab.txt"))  # resumes past the half-written checkpoint
    assert not list(run_dir.rglob(".*.tmp-*"))
    reference_pairs = parquet_bytes(run_dir / "pairs")
    lost = sorted((run_dir / "pairs" / "train").glob("*.parquet"))[0]
    lost.unlink()
    (run_dir / "shards" / "train" / "shard-00001.parquet").unlink()
    repaired = ok(run_pipeline(run_dir, text, vocab / "vocab.txt"))
    assert "1 file(s) missing or changed" in repaired.stderr
    assert parquet_bytes(run_dir / "pairs") == reference_pairs
    report = json.loads((run_dir / "report.json").read_text())
    status = {s["name"]: s["status"] for s in report["stages"]}
    assert status["vocab"] == status["train"] == "skipped" and status["pairs"] == status["shard"] == "ran"
    again = ok(run_pipeline(run_dir, text, vocab / "vocab.txt"))
    assert "every stage complete; nothing to do" in again.stderr


# --- random faults ------------------------------------------------------------------------------------


def test_random_faults_end_in_identical_output_or_a_one_line_refusal(vocab, tmp_path):
    """Seeded random sequences of kills at random times, deleted or truncated outputs, appended inputs and
    reruns, through `corpusprep run --until shard`: the final rerun gives the bytes of a clean run of the
    final inputs; no step prints a traceback or leaves a partial file under a final name."""
    rng = rng_for(2026, "artifact-faults")
    text = corpus(tmp_path / "corpus.txt", docs=200, seed=6)
    run_dir = tmp_path / "run"
    vocab_txt = vocab / "vocab.txt"
    until = ("--until", "shard")
    for step in range(10):
        action = rng.choice(["kill", "kill", "delete", "truncate", "append", "rerun"])
        outputs = sorted(p for p in run_dir.rglob("*") if p.is_file() and p.suffix in (".parquet", ".json")
                         and not any(part.startswith(".") for part in p.relative_to(run_dir).parts))
        if action == "kill":
            args = pipeline_args(run_dir, text, vocab_txt, *until, "--workers", "2")
            proc = subprocess.Popen(args, cwd=REPO, env=environment(), start_new_session=True,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                _, err = proc.communicate(timeout=float(rng.uniform(0.5, 6.0)))
                assert "Traceback" not in err, err
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        elif action in ("delete", "truncate") and outputs:
            victim = outputs[int(rng.integers(len(outputs)))]
            if action == "delete":
                victim.unlink()
            else:
                with open(victim, "r+b") as f:
                    f.truncate(victim.stat().st_size // 2)
        elif action == "append":
            with open(text, "a") as f:
                f.write(f"\nDocument {step} begins here. It has a second sentence too.\n")
        else:
            done = run_pipeline(run_dir, text, vocab_txt, *until)
            assert done.returncode in (0, 1, 2), (step, action, done.stderr)
            if done.returncode:  # a refusal or an error: one line
                assert len(done.stderr.strip().splitlines()[-1:]) == 1
        for path in run_dir.rglob("*.parquet"):
            if not any(part.startswith(".") for part in path.relative_to(run_dir).parts):
                assert path.stat().st_size > 0
    final = run_pipeline(run_dir, text, vocab_txt, *until)
    if final.returncode != 0:  # e.g. a truncated manifest.json of a stage: the one-line message names it
        assert final.stderr.strip().splitlines()[-1].startswith("corpusprep: error: "), final.stderr
        final = run_pipeline(run_dir, text, vocab_txt, *until, "--overwrite")
    ok(final)
    clean = tmp_path / "clean"
    ok(run_pipeline(clean, text, vocab_txt, *until))
    for stage in ("pairs", "shards"):
        assert parquet_bytes(run_dir / stage) == parquet_bytes(clean / stage), stage
    assert (run_dir / "pairs" / MANIFEST).is_file() and not list(run_dir.rglob(".*.tmp-*"))

