"""The fsspec store (corpusprep/engine/fsspec_store.py) against a real S3 server on 127.0.0.1 (moto's, the
`s3_server` fixture): whole-object writes, replace, sorted listings and globs, stat, and the one-line error
of a missing client."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path

import pytest

from corpusprep.engine import storage
from corpusprep.engine.fsspec_store import FsspecStore
from corpusprep.engine.lock import exclusive_dir
from corpusprep.errors import CorpusprepError, UsageError


def test_s3_and_gs_urls_go_to_the_fsspec_store():
    for path in ("s3://bucket/key", Path("s3://bucket/key"), "gs://bucket/key", "GS://bucket/key"):
        assert isinstance(storage.store_for(path), FsspecStore)
    assert storage.url(Path("s3://bucket/a/b.jsonl")) == "s3://bucket/a/b.jsonl"  # pathlib folded `//`
    assert storage.resolve("s3://bucket/a/") == Path("s3:/bucket/a")
    assert storage.url("/tmp/a") == "/tmp/a" and storage.url("file:///tmp/a") == "file:///tmp/a"


@pytest.mark.parametrize("scheme,client,extra", [("s3", "s3fs", "s3"), ("gs", "gcsfs", "gcs")])
def test_a_missing_client_is_one_line_naming_the_extra(monkeypatch, scheme, client, extra):
    """As without the extra: importing the client fails, and fsspec has no class registered for the scheme."""
    monkeypatch.setitem(sys.modules, client, None)  # `import s3fs` raises ImportError
    monkeypatch.delitem(importlib.import_module("fsspec.registry")._registry, scheme, raising=False)
    monkeypatch.setattr(storage, "_LOADED", {})
    with pytest.raises(UsageError) as error:
        storage.is_file(f"{scheme}://bucket/corpus.jsonl")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{scheme}://bucket/corpus.jsonl: {scheme}:// needs a client that is not "
                              "installed")
    assert message.endswith(f"pip install 'corpusprep[{extra}]'")


def test_missing_credentials_are_one_line_naming_the_path(s3_server, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance metadata lookup (a timeout)
    monkeypatch.setattr(storage, "_LOADED", {})  # a store configured from this environment
    with pytest.raises(CorpusprepError) as error:
        storage.write_bytes("s3://corpusprep-test/x/y.bin", b"data")
    message = str(error.value)
    assert "\n" not in message and not isinstance(error.value, UsageError)
    assert message.startswith("s3://corpusprep-test/x/y.bin: s3:// failed: Unable to locate credentials")


def test_an_atomic_write_puts_the_whole_object_or_none(s3_dir):
    target = f"{s3_dir}/out.bin"
    with pytest.raises(RuntimeError), storage.atomic_open(target, "wb") as f:
        f.write(b"half of it")
        raise RuntimeError("killed mid-write")
    assert not storage.is_file(target) and storage.glob(s3_dir, "*") == []
    storage.write_bytes(target, b"old")
    with pytest.raises(RuntimeError), storage.atomic_open(target, "wb") as f:
        f.write(b"half of the new")
        raise RuntimeError("killed mid-write")
    assert storage.read_bytes(target) == b"old"
    storage.write_text(target, "new\r\n", encoding="utf-8", newline="")
    assert storage.read_bytes(target) == b"new\r\n"


def test_replace_remove_and_stat(s3_dir):
    storage.write_bytes(f"{s3_dir}/a.bin", b"12345")
    storage.write_bytes(f"{s3_dir}/b.bin", b"x")
    storage.replace(f"{s3_dir}/a.bin", f"{s3_dir}/b.bin")
    assert storage.read_bytes(f"{s3_dir}/b.bin") == b"12345" and not storage.is_file(f"{s3_dir}/a.bin")
    st = storage.stat(Path(f"{s3_dir}/b.bin"))  # the folded form works too
    assert st.st_size == 5 and st.st_mtime_ns > 0 and st.tag
    with pytest.raises(FileNotFoundError):
        storage.stat(f"{s3_dir}/a.bin")
    with pytest.raises(FileNotFoundError):
        storage.remove(f"{s3_dir}/a.bin")
    storage.remove(f"{s3_dir}/a.bin", missing_ok=True)
    storage.copy_file(f"{s3_dir}/b.bin", f"{s3_dir}/sub/c.bin")
    assert storage.is_dir(f"{s3_dir}/sub") and not storage.is_file(f"{s3_dir}/sub")
    storage.remove_tree(s3_dir)
    assert not storage.is_dir(s3_dir)
    storage.remove_tree(s3_dir)  # nothing there: nothing to do


def test_listings_and_globs_are_sorted(s3_dir):
    names = [f"f{i:02d}.jsonl" for i in range(12)] + ["B.txt", "a.txt"]
    random.Random(5).shuffle(names)
    for name in names:
        storage.write_bytes(f"{s3_dir}/{name}", b"{}\n")
    storage.write_bytes(f"{s3_dir}/deep/er/z.jsonl", b"{}\n")
    assert [p.name for p in storage.list_dir(s3_dir)] == sorted([*names, "deep"])
    jsonl = storage.glob(s3_dir, "*.jsonl")
    assert [p.name for p in jsonl] == sorted(n for n in names if n.endswith(".jsonl"))
    assert all(storage.url(p).startswith(f"{s3_dir}/") for p in jsonl)
    assert [storage.url(p) for p in storage.rglob(s3_dir, "z.jsonl")] == [f"{s3_dir}/deep/er/z.jsonl"]
    assert [p.name for p in storage.match(f"{s3_dir}/f0*.jsonl")] == [f"f{i:02d}.jsonl" for i in range(10)]
    dirs, files = storage.entries(s3_dir)
    assert dirs == ["deep"] and files == sorted(names)
    walked = [(storage.url(d), ds, fs) for d, ds, fs in storage.walk(f"{s3_dir}/deep")]
    assert walked == [(f"{s3_dir}/deep", ["er"], []), (f"{s3_dir}/deep/er", [], ["z.jsonl"])]


def test_a_prefix_without_objects_lists_as_an_empty_directory(s3_dir):
    assert storage.list_dir(f"{s3_dir}/none") == [] and storage.entries(f"{s3_dir}/none") == ([], [])
    assert not storage.exists(f"{s3_dir}/none")  # neither a file nor a directory: nothing there
    storage.write_bytes(f"{s3_dir}/some/x", b"1")
    assert storage.exists(f"{s3_dir}/some") and storage.exists(f"{s3_dir}/some/x")


def test_conditional_writes_create_once_and_replace_only_the_version_read(s3_dir):
    store, path = storage.store_for(s3_dir), f"{s3_dir}/lease"
    tag = store.create_exclusive(path, b"one")
    with pytest.raises(FileExistsError):
        store.create_exclusive(path, b"two")  # If-None-Match: * (the server refuses: moto honours it)
    assert store.read_tagged(path, 100) == (b"one", tag)
    newer = store.replace_if(path, b"three", tag)
    with pytest.raises(FileExistsError):
        store.replace_if(path, b"four", tag)  # If-Match on a version that is gone
    assert store.read_tagged(path, 100) == (b"three", newer) and newer != tag


def test_a_writer_on_a_store_without_wired_conditional_writes_is_one_line():
    refused = r"^gs://b/out/\.corpusprep\.lock: no writer's lease on gs:// yet"  # no client needed first
    with pytest.raises(UsageError, match=refused), exclusive_dir("gs://b/out"):
        pass


@pytest.mark.parametrize("given,line", [
    ("s3://b//x/y", r"^s3://b//x/y: an output on an object store may not hold an empty, `\.` or `\.\.` part"),
    ("s3://bkt/a/../y", r"^s3://bkt/a/\.\./y: an output on an object store may not hold an empty"),
    ("s3://bkt/out[1]", r"^s3://bkt/out\[1\]: an output may not hold a glob character"),
    ("s3://bkt/a\rb", r"^s3://bkt/a\\rb: a control character in the URL"),
    ("s3://-bkt/x", r"^s3://-bkt/x: not a bucket name \(-bkt: 3 to 63 lowercase"),
    ("s3://b%t/x", r"^s3://b%t/x: not a bucket name"),
    ("s3://", r"^s3://: no bucket name \(s3://BUCKET/KEY\)$"),
    (Path("s3://"), r"^s3://: no bucket name \(s3://BUCKET/KEY\)$"),  # pathlib's `s3:`: no local folder
])
def test_an_output_url_no_store_can_hold_is_one_line_before_any_request(given, line, tmp_path, monkeypatch):
    """No client is needed to refuse it (gs:// has none installed here), and nothing is written."""
    monkeypatch.chdir(tmp_path)
    for write in (lambda: storage.makedirs(given), lambda: storage.write_bytes(given, b"x"),
                  lambda: storage.remove_tree(given)):
        with pytest.raises(UsageError, match=line):
            write()
    assert list(tmp_path.iterdir()) == []


def test_a_url_is_read_as_given_but_written_only_literally():
    """Reads take patterns (an input `s3://b/corpus/*.jsonl`) and a folded `s3:` (the parent of a bucket);
    a write does not: a key with `*` would be expanded by fsspec, a bucket is no object."""
    from corpusprep.engine import urls

    urls.check("s3://bkt/corpus/*.jsonl")
    urls.check("s3://bkt")
    urls.check("s3://Legacy_Bucket.1/x", literal=True)  # S3's old rule: accepted by the store, if it exists
    with pytest.raises(UsageError, match=r"^s3://bkt: a bucket, not an object"):
        urls.check("s3://bkt", whole=True)
    assert urls.bucket_hint("bkt") == "" and "lowercase" in urls.bucket_hint("BKT")
    assert urls.url(Path("s3:///x")) == "s3://x"  # pathlib's folding: `s3:///x` is the bucket x
    assert storage.is_dir(Path("s3://")) is False  # the parent of `s3:/bucket`, read: a local name, absent
