"""Damaged shards: `corpusprep validate` and the trainer's `--verify` name the file and stop with exit 1.

One real shards directory (build-pairs + shard) is copied and damaged once per case; both checkers run on
each copy as a user runs them (child processes, in parallel: the trainer's start-up is mostly torch's).
tests/shard/test_validate.py covers each damage in depth at the function level; this is the promise as seen
from the command line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from corpusprep.engine.files import read_json, write_json
from corpusprep.pair.build import PairOptions, build_pairs
from corpusprep.read import ReadOptions
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from tests.contexts import quiet
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.reliability.helpers import REPO, command, environment, error_line

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("corruption")]

VICTIM = "train/shard-00001.parquet"
Checked = subprocess.CompletedProcess
SETTINGS = ("data.batch_size=4", "eval.every=0", "schedule.warmup_steps=0")
TRAIN = ["--steps", "1", "--preset", "tiny", "--device", "cpu", "--verify",
         *(x for s in SETTINGS for x in ("--set", s))]


def flip_bytes(shards: Path) -> None:
    path = shards / VICTIM
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 8):  # in place: the size still matches the manifest
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def truncate(shards: Path) -> None:
    path = shards / VICTIM
    path.write_bytes(path.read_bytes()[:-500])


def add_unlisted(shards: Path) -> None:
    shutil.copy(shards / VICTIM, shards / "train" / "shard-00009.parquet")


def delete(shards: Path) -> None:
    (shards / VICTIM).unlink()


def edit_manifest(change):
    def apply(shards: Path) -> None:
        manifest = read_json(shards / "manifest.json")
        entry = next(e for e in manifest["splits"]["train"]["shards"] if e["path"] == VICTIM)
        change(entry)
        write_json(shards / "manifest.json", manifest)

    return apply


# damage -> (what validate says about VICTIM, what the trainer says about it)
CASES = {
    "flipped_bytes": (flip_bytes, "sha256 differs from the manifest", "sha256 "),
    "truncated": (truncate, "bytes, manifest says", "bytes, manifest says"),
    "deleted": (delete, "missing", "missing"),
    "manifest_sha256": (edit_manifest(lambda e: e.update(sha256="0" * 64)), "sha256 differs", "sha256 "),
    "manifest_rows": (edit_manifest(lambda e: e.update(rows=e["rows"] + 1)), "rows, manifest says",
                      "rows, manifest says"),
    "not_in_manifest": (add_unlisted, "file not in the manifest", "shard-00009.parquet"),
}


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> dict[str, tuple[Path, Checked, Checked]]:
    """Each case's damaged copy with the results of `corpusprep validate` and `trainer.run --verify` on it."""
    root = tmp_path_factory.mktemp("corruption")
    corpus = write_bert(root / "corpus.txt", synthetic_documents(300, seed=4))
    vocab = make_vocab(root / "vocab")
    build_pairs([corpus], vocab, root / "pairs", PairOptions(dupe_factor=1, docs_per_partition=100),
                ReadOptions(format="bert"), context=quiet(1))
    pristine = root / "pristine"
    build_shards(root / "pairs", vocab, pristine, ShardOptions(num_shards=3), context=quiet(1))
    jobs = {}
    for case, (damage, _, _) in CASES.items():
        shards = root / case
        shutil.copytree(pristine, shards)
        damage(shards)
        trainer = [sys.executable, "-m", "trainer.run", "--shards", shards, "--run-dir", root / f"run-{case}",
                   *TRAIN]
        jobs[case] = shards, command("validate", shards), trainer

    def check(args: list) -> Checked:
        return subprocess.run(list(map(str, args)), cwd=REPO, env=environment(), capture_output=True,
                              text=True, timeout=300)

    with ThreadPoolExecutor(3) as pool:  # a few at once: each trainer process loads torch
        futures = {case: (shards, pool.submit(check, v), pool.submit(check, t))
                   for case, (shards, v, t) in jobs.items()}
        return {case: (shards, v.result(), t.result()) for case, (shards, v, t) in futures.items()}


def test_pristine_copy_is_valid(damaged):
    shards = next(iter(damaged.values()))[0].parent / "pristine"  # beside the damaged copies
    done = subprocess.run(command("validate", shards), cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith(f"{shards}: valid shards directory ("), done.stdout


@pytest.mark.parametrize("case", CASES)
def test_validate_names_the_damaged_file(damaged, case):
    shards, validate, _ = damaged[case]
    _, says, _ = CASES[case]
    assert validate.returncode == 1
    assert "Traceback" not in validate.stderr
    lines = validate.stderr.strip().splitlines()
    name = "train/shard-00009.parquet" if case == "not_in_manifest" else VICTIM
    assert any(line.startswith(f"{shards}: {name}") and says in line for line in lines), lines
    assert lines[-1].startswith(f"corpusprep: error: {shards}: INVALID shards directory: ")


@pytest.mark.parametrize(
    "case",
    list(CASES),
)
def test_trainer_verify_names_the_damaged_file_and_stops(damaged, case):
    shards, _, trainer = damaged[case]
    _, _, says = CASES[case]
    assert trainer.returncode == 1, trainer.stderr[-2000:]
    line = error_line(trainer, prefix="error: ")
    name = "train/shard-00009.parquet" if case == "not_in_manifest" else VICTIM
    assert line.startswith(f"{shards / name}: ") and says in line
    assert not (shards.parent / f"run-{case}" / "checkpoints").exists()
