"""The rest of the README's data flow with s3:// paths against a real S3 server on 127.0.0.1 (the
`s3_server` fixture): `corpusprep inspect / stats / validate` read shards on the store and say what they say
of the local copy; `trainer.run` writes its checkpoints and metrics to an s3:// run dir and resumes from it;
`trainer.export`, `trainer.import_hf` and `trainer.evaluate` read and write the store; `corpusprep run
--run-dir s3://` writes every stage there. Each is compared with the same command on local disk: the same
bytes for the data (Parquet, safetensors, vocab, images), the records alike but for paths and times."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from corpusprep.engine import faults, storage
from tests.cli.test_s3_outputs import local_files, ok, store_files, write_corpus
from tests.conftest import REPO, S3_BUCKET
from tests.trainer.evaluate_helpers import write_toy_task

# what the records of a run on disk and one on the store may differ in: times and rates, and the sizes and
# digests of records that hold the run's own path (longer on the store)
TIMED_KEYS = {"seconds", "elapsed", "output", "files", "load_average", "fingerprint", "seq_per_s",
              "tokens_per_s", "train_seconds", "started", "finished", "wall_seconds", "throughput", "bytes",
              "outputs"}
DIGEST = re.compile("[0-9a-f]{64}")


def python_m(module: str, *args: str | Path) -> subprocess.CompletedProcess:
    """`python -m MODULE ARGS` in a child process (the environment the S3 server fixture set)."""
    env = {k: v for k, v in os.environ.items() if k != faults.ENV}
    env |= {"PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def done(module: str, *args: str | Path) -> str:
    result = python_m(module, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def one_line(result: subprocess.CompletedProcess, code: int = 2) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def upload(local: Path, url: str) -> None:
    """Every file under `local` to the prefix `url`, through the storage seam, byte for byte."""
    for path in sorted(p for p in local.rglob("*") if p.is_file() and not p.name.startswith(".corpusprep")):
        storage.copy_file(path, f"{url}/{path.relative_to(local).as_posix()}")


def without_places(value, swaps: list[tuple[str, str]]):
    """A record with each local root written as its URL (`swaps`: (local, URL)), without times and digests."""
    text = json.dumps(value)
    for local, url in swaps:
        text = text.replace(local, url)
    value = json.loads(text)

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in TIMED_KEYS}
        if isinstance(v, str) and DIGEST.fullmatch(v):  # of files holding times (a training run's)
            return "<digest>"
        return [strip(x) for x in v] if isinstance(v, list) else v

    return strip(value)


def assert_same_tree(
    local: Path, url: str, data_suffixes: tuple[str, ...], inputs: tuple[Path, str] | None = None
) -> dict[str, bytes]:
    """The same files; each data file (by suffix) byte for byte; each JSON record alike (paths swapped: the
    tree's and its `inputs`' (local, URL), times and digests aside)."""
    swaps = [(str(local), url), *([(str(inputs[0]), inputs[1])] if inputs else [])]
    ours, theirs = local_files(local), store_files(url)
    assert sorted(ours) == sorted(theirs)
    data = [name for name in ours if name.endswith(data_suffixes)]
    differ = [name for name in data if ours[name] != theirs[name]]
    assert data and not differ, differ
    for name in (n for n in ours if n.endswith(".json") and ours[n] != theirs[n]):
        mine = without_places(json.loads(ours[name]), swaps)
        assert mine == without_places(json.loads(theirs[name]), swaps), name
    return theirs


@pytest.fixture(scope="module")
def shards(s3_server, tmp_path_factory) -> tuple[Path, str]:
    """(a local root, an s3:// root) both holding vocab/, pairs/ and shards/ of a small corpus, the same
    bytes (built on disk, copied through the storage seam)."""
    root = tmp_path_factory.mktemp("flow")
    corpus = write_corpus(root / "corpus")
    local = root / "out"
    ok("vocab", corpus, "-o", local / "vocab", "--vocab-size", "600")
    ok("build-pairs", corpus, "--vocab", local / "vocab", "-o", local / "pairs", "--dupe-factor", "2")
    ok("shard", local / "pairs", "--vocab", local / "vocab", "-o", local / "shards", "--num-shards", "2")
    url = f"s3://{S3_BUCKET}/data-flow-{uuid.uuid4().hex[:8]}"
    upload(local, url)
    return local, url


@pytest.mark.slow  # 15 commands, each a Python start-up reading small shards; the fixture builds them (13 s)
def test_inspect_stats_and_validate_say_of_shards_on_s3_what_they_say_of_the_local_copy(shards):
    local, url = shards
    for command in (["inspect", "-n", "3"], ["stats"], ["validate"]):
        ours = done("corpusprep", command[0], local / "shards", *command[1:])
        theirs = done("corpusprep", command[0], f"{url}/shards", *command[1:])
        assert theirs == ours.replace(str(local), url), command
    assert "valid shards directory (" in ours
    plotted = done("corpusprep", "stats", f"{url}/shards", "--plot", f"{url}/stats.png")
    assert plotted.endswith(f"plot: {url}/stats.png\n")
    done("corpusprep", "stats", local / "shards", "--plot", local.parent / "stats.png")
    assert storage.read_bytes(f"{url}/stats.png") == (local.parent / "stats.png").read_bytes()
    for output, kind in (("vocab", "vocab directory"), ("pairs", "pairs directory")):
        said = done("corpusprep", "validate", f"{url}/{output}")
        assert said == done("corpusprep", "validate", local / output).replace(str(local), url)
        assert f"valid {kind}" in said

    # a shard changed on the store: the same problem lines as for the local copy changed alike, exit 1
    name = "shards/train/shard-00001.parquet"
    damaged = bytearray(storage.read_bytes(f"{url}/{name}"))
    damaged[len(damaged) // 2] ^= 0xFF
    storage.write_bytes(f"{url}/{name}", bytes(damaged))
    mine = local.parent / "damaged"
    upload(local, str(mine))  # a local copy, damaged the same way
    (mine / name).write_bytes(bytes(damaged))
    ours, theirs = python_m("corpusprep", "validate", mine / "shards"), python_m("corpusprep", "validate",
                                                                                 f"{url}/shards")
    assert theirs.returncode == ours.returncode == 1
    assert theirs.stderr == ours.stderr.replace(str(mine), url) and "sha256 differs" in theirs.stderr
    missing = python_m("corpusprep", "inspect", f"{url}/nothing")
    assert one_line(missing) == f"corpusprep: error: {url}/nothing/manifest.json: missing (not a finished " \
                                "shards directory)"
    storage.copy_file(local / name, f"{url}/{name}")  # as it was, for the tests after this one


TRAIN = ["--preset", "tiny", "--batch-size", "8", "--warmup-steps", "1", "--checkpoint-every", "2",
         "--log-every", "2", "--device", "cpu"]


def trainer_run(shards: str | Path, run_dir: str | Path, steps: int, *more: str) -> list:
    return ["trainer.run", "--shards", shards, "--run-dir", run_dir, "--steps", str(steps), *more, *TRAIN]


@pytest.mark.slow  # 16 commands: 6 train a tiny model (a few steps), 3 fine-tune one (100 s, load 5)
def test_train_resume_export_import_and_evaluate_on_s3_write_the_bytes_they_write_to_disk(shards, tmp_path):
    local, url = shards
    runs, prefix = tmp_path / "runs", f"{url}/runs-{uuid.uuid4().hex[:6]}"
    on_disk, on_s3 = (local / "shards", runs / "run"), (f"{url}/shards", f"{prefix}/run")
    done(*trainer_run(*on_disk, 4))
    done(*trainer_run(*on_s3, 4))
    assert_same_tree(runs / "run", f"{prefix}/run", (".safetensors",), shards)
    # a second run into it is refused until --resume, as on disk
    again = python_m(*trainer_run(*on_s3, 6))
    assert one_line(again) == f"error: {prefix}/run: has checkpoints up to step-0000004; pass --resume or " \
                              "use another run dir"

    # a checkpoint whose last file (config.json, put last) never arrived is no checkpoint: resumed from 4
    done(*trainer_run(*on_disk, 6, "--resume"))
    assert "from step 4" in done(*trainer_run(*on_s3, 6, "--resume"))
    storage.remove(f"{prefix}/run/checkpoints/step-0000006/config.json")
    assert "from step 4" in done(*trainer_run(*on_s3, 6, "--resume"))
    run = assert_same_tree(runs / "run", f"{prefix}/run", (".safetensors",), shards)
    assert sum(name.endswith("weights.safetensors") for name in run) == 3
    assert "nothing to do" in done(*trainer_run(*on_s3, 6, "--resume"))
    valid = "valid trainer run directory (3 checkpoints, newest step-0000006)"
    assert valid in done("corpusprep", "validate", f"{prefix}/run")

    # export from the store to the store: the local export's bytes; the rerun is up to date
    done("trainer.export", runs / "run", runs / "hf")
    wrote = done("trainer.export", f"{prefix}/run", f"{prefix}/hf").strip()
    assert wrote == f"wrote {prefix}/hf (max_position_embeddings 128: the longest sequence it was trained on)"
    assert store_files(f"{prefix}/hf") == local_files(runs / "hf")
    # the rerun is up to date; --verify loads the export on the store with transformers (a copy): exit 0
    assert "up to date" in done("trainer.export", f"{prefix}/run", f"{prefix}/hf", "--verify")
    # import_hf from the store to the store
    done("trainer.import_hf", runs / "hf", runs / "imported")
    done("trainer.import_hf", f"{prefix}/hf", f"{prefix}/imported")
    assert_same_tree(runs / "imported", f"{prefix}/imported", (".safetensors", "vocab.txt", "tokenizer.json"),
                     (runs / "hf", f"{prefix}/hf"))
    assert "up to date" in done("trainer.import_hf", f"{prefix}/hf", f"{prefix}/imported")

    # evaluate a run dir on the store, its record written to the store: the same scores
    train, dev = write_toy_task(tmp_path / "task", train=24, dev=8)
    task = ["--train", train, "--dev", dev, "--seeds", "1", "--epochs", "1", "--workers", "1",
            "--device", "cpu"]
    done("trainer.evaluate", runs / "run", *task, "-o", runs / "evaluation")
    done("trainer.evaluate", f"{prefix}/run", *task, "-o", f"{prefix}/evaluation")
    ours, theirs = local_files(runs / "evaluation"), store_files(f"{prefix}/evaluation")
    assert sorted(ours) == sorted(theirs)
    scores = [without_places(json.loads(files["evaluation.json"])["runs"], []) for files in (ours, theirs)]
    assert scores[0] == scores[1] and len(scores[0]) == 2 and "accuracy" in scores[0][0]["scores"]["dev"]
    assert json.loads(theirs["evaluation.json"])["model"]["source"] == f"{prefix}/run"
    # a Hugging Face directory and the task's files on the store (the model copied for from_pretrained):
    # the export of that run, its scores
    for path in (train, dev):
        storage.copy_file(path, f"{prefix}/task/{path.name}")
    on_store = ["--train", f"{prefix}/task/{train.name}", "--dev", f"{prefix}/task/{dev.name}", *task[4:]]
    done("trainer.evaluate", f"{prefix}/hf", *on_store, "-o", f"{prefix}/evaluation-hf")
    hf = json.loads(storage.read_bytes(f"{prefix}/evaluation-hf/evaluation.json"))
    assert without_places(hf["runs"], []) == scores[0] and hf["model"]["source"] == f"{prefix}/hf"


SETTINGS = ("input.demo_mb=0.1", "vocab.vocab_size=600", "pairs.dupe_factor=1", "shard.num_shards=2",
            "train.schedule.steps=4", "train.checkpoint.every=2", "train.eval.every=2",
            "train.logging.every=2")
PIPELINE = [*(part for setting in SETTINGS for part in ("--set", setting)), "--workers", "1"]


@pytest.mark.slow  # 3 pipeline runs of six small stages, one of them training (25 s)
def test_a_pipeline_run_dir_on_s3_holds_the_bytes_of_one_on_disk(s3_dir, tmp_path):
    ok("run", "pipelines/demo.toml", "--run-dir", tmp_path / "demo", *PIPELINE)
    said = ok("run", "pipelines/demo.toml", "--run-dir", f"{s3_dir}/demo", *PIPELINE)
    assert f"report: {s3_dir}/demo/report.md" in said
    data = (".parquet", ".safetensors", "vocab.txt", "tokenizer.json", ".png", ".jsonl.zst", "demo.jsonl")
    files = assert_same_tree(tmp_path / "demo", f"{s3_dir}/demo", data)
    assert {"shards/manifest.json", "train/checkpoints/step-0000004/weights.safetensors",
            "plot/curves.png", "report.md"} <= set(files)
    assert "nothing to do" in ok("run", "pipelines/demo.toml", "--run-dir", f"{s3_dir}/demo", *PIPELINE)
    again = store_files(f"{s3_dir}/demo")  # nothing written again but the report (as on disk), no lease left
    assert {k: v for k, v in again.items() if not k.startswith("report.")} == \
        {k: v for k, v in files.items() if not k.startswith("report.")}
    valid = "valid pipeline run directory (6 stage outputs checked)"
    assert valid in done("corpusprep", "validate", f"{s3_dir}/demo")


def torchrun(shards: str | Path, run_dir: str | Path, steps: int, *more: str) -> list:
    return ["torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
            *trainer_run(shards, run_dir, steps, *more)]


@pytest.mark.slow  # 3 torchrun launches of 2 CPU ranks (gloo), a few steps each (25 s)
def test_two_ranks_under_torchrun_write_and_resume_an_s3_run_dir(shards, tmp_path):
    local, url = shards
    prefix = f"{url}/ddp-{uuid.uuid4().hex[:6]}"
    done(*torchrun(local / "shards", tmp_path / "run", 4))
    assert "2 rank(s) on cpu" in done(*torchrun(f"{url}/shards", f"{prefix}/run", 4))
    assert_same_tree(tmp_path / "run", f"{prefix}/run", (".safetensors",), shards)
    assert "from step 4" in done(*torchrun(f"{url}/shards", f"{prefix}/run", 6, "--resume"))
    valid = "valid trainer run directory (3 checkpoints, newest step-0000006)"
    assert valid in done("corpusprep", "validate", f"{prefix}/run")
