"""Shards on an object store (moto's S3 server on 127.0.0.1, `s3_dir`): the trainer reads the manifest and
vocab through the storage seam, fetches each shard into a bounded local cache, verified once against the
manifest's sha256, and memory-maps the copy: the same batches and losses as from the local directory."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from corpusprep.engine import storage
from corpusprep.errors import DataError
from trainer import run
from trainer.cache import ShardCache, cache_folder
from trainer.config import DataConfig
from trainer.data import ShardStream, epoch_order, loader_batches, plan_chunks
from trainer.shards import open_shards


def upload(local: Path, url: str) -> str:
    """Every file of the shards directory `local` under the prefix `url`, as s3fs puts them."""
    s3fs = pytest.importorskip("s3fs")
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        fs.put_file(str(path), f"{url.removeprefix('s3://')}/{path.relative_to(local).as_posix()}")
    return url


def epoch_batches(shards, batch_size: int = 256) -> list[dict]:
    """A little more than one epoch of training batches (dynamically masked: the vocab is read too)."""
    stream = ShardStream(shards, "train",
                         DataConfig(batch_size=batch_size, chunk_rows=64, dynamic_masking=True), seed=3)
    batches = stream.worker_batches(0, 1)
    return [next(batches) for _ in range(stream.epoch_examples // batch_size + 2)]


def assert_same_batches(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.keys() == b.keys()
        for key, value in b.items():
            assert torch.equal(a[key], value) if isinstance(value, torch.Tensor) else a[key] == value, key


@pytest.mark.slow  # ~1.8 s (loaded machine): an epoch read twice, the shards uploaded
def test_batches_from_a_store_are_the_local_batches(tiny_shards, s3_dir, tmp_path):
    url = upload(tiny_shards, s3_dir)
    cache = ShardCache(tmp_path / "cache", max_bytes=1 << 30, ahead=2)
    remote = open_shards(url, ("train", "validation"), verify=True, cache=cache)
    assert_same_batches(epoch_batches(remote), epoch_batches(open_shards(tiny_shards)))
    cache.close()
    train = remote.files("train")
    assert all(f.path.as_posix().startswith("s3:/") for f in train)
    folder = tmp_path / "cache" / cache_folder()  # the cache's own, in the directory it was given
    assert {p.name for p in folder.iterdir()} == {f"{f.sha256}.parquet" for f in train} | {
        f"{remote.manifest['vocab']['sha256']}.txt", "owned.json"
    }
    assert cache.fetched == len(train) + 1  # each shard and the vocab once, prefetched or not

    # a second reader over the same cache fetches nothing: each file there is hashed once and found intact
    again = ShardCache(tmp_path / "cache", max_bytes=1 << 30, ahead=2)
    epoch_batches(open_shards(url, cache=again))
    again.close()
    assert again.fetched == 0

    # a copy damaged on disk since (same size, same times: bit rot) is not trusted by its name: it is
    # removed (it is the cache's) and fetched again
    damaged = folder / f"{train[0].sha256}.parquet"
    st = damaged.stat()
    with open(damaged, "r+b") as f:
        f.seek(st.st_size // 2)
        byte = f.read(1)
        f.seek(st.st_size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(damaged, ns=(st.st_atime_ns, st.st_mtime_ns))
    record = json.loads((folder / "owned.json").read_text())
    record["files"][damaged.name]["identity"][3] = damaged.stat().st_ctime_ns  # as if the disk did it
    (folder / "owned.json").write_text(json.dumps(record))
    third = ShardCache(tmp_path / "cache", max_bytes=1 << 30, ahead=2)
    assert_same_batches(epoch_batches(open_shards(url, cache=third)), epoch_batches(open_shards(tiny_shards)))
    third.close()
    assert third.fetched == 1
    assert hashlib.sha256(damaged.read_bytes()).hexdigest() == train[0].sha256


@pytest.mark.slow  # ~1.5 s (loaded machine): two DataLoader worker processes
def test_dataloader_workers_read_a_store_through_their_own_cache(tiny_shards, s3_dir, tmp_path):
    """The cache travels to the workers as its settings (no thread, no futures): each fetches into the same
    directory, and together they make the batches one reader of the local directory makes."""
    url = upload(tiny_shards, s3_dir)
    remote = open_shards(url, cache=ShardCache(tmp_path / "cache", max_bytes=1 << 30, ahead=1))
    stream = ShardStream(remote, "train", DataConfig(batch_size=64, chunk_rows=64), seed=5)
    got = list(itertools.islice(loader_batches(stream, num_workers=2), 40))
    want = ShardStream(open_shards(tiny_shards), "train", DataConfig(batch_size=64, chunk_rows=64),
                       seed=5).worker_batches(0, 1)
    assert_same_batches(got, [next(want) for _ in range(40)])
    assert {p.suffix for p in (tmp_path / "cache" / cache_folder()).iterdir()} == {".parquet", ".json"}


@pytest.mark.slow  # ~3.4 s (loaded machine): two epochs read, files evicted and fetched again
def test_the_cache_bound_holds_and_reads_stay_correct(tiny_shards, s3_dir, tmp_path):
    url = upload(tiny_shards, s3_dir)
    local = open_shards(tiny_shards)
    want = epoch_batches(local)
    sizes = [f.bytes for f in local.files("train")]
    for bound, ahead in ((1, 2), (2 * max(sizes) + 1, 2)):  # smaller than one shard; two shards' worth
        directory = tmp_path / f"cache-{bound}"
        cache = ShardCache(directory, max_bytes=bound, ahead=ahead)
        assert_same_batches(epoch_batches(open_shards(url, cache=cache)), want)
        cache.close()
        held = [p.stat().st_size for p in (directory / cache_folder()).glob("*.parquet")]
        assert cache.fetched > len(sizes) + 1  # evicted, fetched again when the order came back (+ the vocab)
        assert sum(held) <= max(bound, max(sizes))  # the bound, or the one file in use when it is smaller


@pytest.mark.slow  # ~2.2 s (loaded machine): the shards uploaded, a trainer start
def test_a_corrupt_object_is_one_line_naming_its_url(tiny_shards, s3_dir, tmp_path, capsys):
    url = upload(tiny_shards, s3_dir)
    local = open_shards(tiny_shards)
    files = local.files("train")
    first = epoch_order(plan_chunks(files, 64), 0, 0, True)[0].file  # what the trainer reads first
    name = files[first].path.relative_to(tiny_shards).as_posix()
    data = bytearray(files[first].path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte: the size still matches, only the sha256 can tell
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    upload_one(bad, f"{url}/{name}")

    cache = tmp_path / "cache"
    code = run.main(["--shards", url, "--run-dir", str(tmp_path / "run"), "--steps", "2", "--seed", "0",
                     "--device", "cpu", "--batch-size", "8", "--set", "data.chunk_rows=64",
                     "--set", f"data.cache_dir={json.dumps(str(cache))}"])
    err = capsys.readouterr().err
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"{url}/{name}: sha256" in lines[0] and "the file is not used" in lines[0]
    assert not (cache / cache_folder() / f"{files[first].sha256}.parquet").exists()
    assert not [p for p in (cache / cache_folder()).iterdir() if p.name.startswith(".")]  # no partial file


def upload_one(local: Path, url: str) -> None:
    s3fs = pytest.importorskip("s3fs")
    s3fs.S3FileSystem(skip_instance_cache=True).put_file(str(local), url.removeprefix("s3://"))


def losses(run_dir: Path) -> list[tuple[int, float]]:
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"]) for r in lines if "loss" in r]


def train_command(shards: str | Path, run_dir: Path, cache: Path, *extra: str) -> list[str]:
    return ["--shards", str(shards), "--run-dir", str(run_dir), "--steps", "8", "--checkpoint-every", "4",
            "--eval-every", "4", "--batch-size", "8", "--log-every", "1", "--device", "cpu", "--lr", "1e-3",
            "--warmup-steps", "2", "--set", "data.chunk_rows=64", "--set", "eval.max_batches=2",
            "--set", f"data.cache_dir={json.dumps(str(cache))}", *extra]


@pytest.mark.slow  # ~3.1 s (loaded machine): three short training runs
def test_training_from_a_store_equals_training_from_the_local_copy(tiny_shards, s3_dir, tmp_path):
    url = upload(tiny_shards, s3_dir)
    cache = tmp_path / "cache"
    assert run.main(train_command(tiny_shards, tmp_path / "local", cache)) == 0
    assert not cache.exists()  # a local shards directory is read in place: nothing copied
    assert run.main(train_command(url, tmp_path / "store", cache)) == 0
    assert losses(tmp_path / "store") == losses(tmp_path / "local")
    assert len(losses(tmp_path / "local")) == 8

    # "killed" after the step-4 checkpoint, its cache wiped: --resume fetches again and continues identically
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "store", cut)
    shutil.rmtree(cut / "checkpoints" / "step-0000008")
    shutil.rmtree(cache)
    assert run.main(train_command(url, cut, cache, "--resume")) == 0
    assert losses(cut) == losses(tmp_path / "local")
    assert any(cache.glob("*/*.parquet"))
    saved = json.loads(storage.read_text(next((cut / "checkpoints").glob("step-0000008/config.json"))))
    assert saved["train"]["data"]["shards"] == url  # recorded as the URL, not as a local path


def test_a_shards_url_with_no_manifest_is_one_line(s3_dir, tmp_path):
    with pytest.raises(Exception, match="no manifest") as found:
        open_shards(s3_dir + "/nothing", cache=ShardCache(tmp_path, 1, 0))
    assert str(found.value).startswith(f"{s3_dir}/nothing/manifest.json: ")
    assert not isinstance(found.value, DataError)  # a usage error: nothing was read


def test_a_fetch_is_verified_and_the_cache_keeps_a_folder_of_its_own(tmp_path):
    """The cache's own rules, on a local source (any path of the seam fetches alike): kept under its sha256
    only when the bytes match, never left half-written, in a folder it made (mode 0700) inside the directory
    it was given, whose mode it never changes (a folder others can write into stays so: the cache's own
    folder inside is its alone)."""
    source = tmp_path / "shard.parquet"
    source.write_bytes(b"rows" * 1000)
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    directory = tmp_path / "cache"
    directory.mkdir()
    os.chmod(directory, 0o777)
    cache = ShardCache(directory, max_bytes=1 << 20, ahead=0)
    line = rf"^{source}: sha256 .* but the manifest says {'0' * 12}\.\.\.; the file is not used$"
    with pytest.raises(DataError, match=line):
        cache.local(source, "0" * 64, 4000)
    folder = directory / cache_folder()
    assert [p.name for p in folder.iterdir()] == ["owned.json"]
    assert directory.stat().st_mode & 0o777 == 0o777 and folder.stat().st_mode & 0o777 == 0o700
    assert cache.local(source, sha, 4000).read_bytes() == source.read_bytes()
    assert sorted(p.name for p in folder.iterdir()) == [f"{sha}.parquet", "owned.json"] and cache.fetched == 1
    assert cache.local(source, sha, 4000) == folder / f"{sha}.parquet" and cache.fetched == 1  # cached
