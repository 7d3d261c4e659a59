"""Output URLs no object store can hold, given to every command that writes: one line naming the URL, exit 2,
never a traceback, and nothing written anywhere (a local folder named `s3:` included). The URLs are those a
hostile tester and a new user typed: a bucket that does not exist, `s3:///x` (read as `s3://x`: pathlib folds
`//`, so a bucket named `x`), a bucket name of capitals, a line break in the key, a glob character (fsspec
would expand it: a removal would reach every object it matches). Each command runs in this process, against
moto's S3 server (the `s3_server` fixture), from real inputs (tests/security/trust_world.py)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from corpusprep.engine import storage
from corpusprep.errors import guarded
from tests.conftest import S3_BUCKET
from tests.security.trust_world import (
    SMALL_PIPELINE,
    Result,
    _captured,
    corpusprep,
    train_args,
    trainer_export,
    trainer_run,
)
from tests.trainer.evaluate_helpers import write_toy_task


def python_m(module: str, *args: str | Path) -> Result:
    """`python -m MODULE ARGS` (trainer.import_hf, trainer.evaluate) in this process, guarded as its
    __main__ runs it."""
    import importlib

    main = importlib.import_module(module + (".__main__" if module == "trainer.evaluate" else "")).main
    with _captured([module, *map(str, args)]) as (out, err):
        code = guarded(lambda: main([str(a) for a in args]))
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def inputs(outputs, tmp_path_factory) -> dict[str, Path]:
    """The world's outputs, its run exported (import_hf's input) and a toy task (evaluate's)."""
    root = tmp_path_factory.mktemp("url_inputs")
    done = trainer_export(outputs.run, root / "hf")
    assert done.code == 0, done.err
    train, dev = write_toy_task(root / "task", train=8, dev=4)
    return {"text": outputs.text, "vocab": outputs.vocab, "pairs": outputs.pairs, "shards": outputs.shards,
            "run": outputs.run, "hf": root / "hf", "train": train, "dev": dev}


# command -> how it runs with OUT as its output
COMMANDS = {
    "vocab": lambda i, out: corpusprep("vocab", i["text"], "-o", out, "--vocab-size", "300", "--no-progress"),
    "sentences": lambda i, out: corpusprep("sentences", i["text"], "-o", out, "--no-progress"),
    "build-pairs": lambda i, out: corpusprep("build-pairs", i["text"], "--vocab", i["vocab"], "-o", out,
                                             "--workers", "1", "--no-progress"),
    "shard": lambda i, out: corpusprep("shard", i["pairs"], "--vocab", i["vocab"], "-o", out,
                                       "--workers", "1", "--no-progress"),
    "trainer.run": lambda i, out: trainer_run(*train_args(i["shards"], out, 1)),
    "trainer.export": lambda i, out: trainer_export(i["run"], out),
    "trainer.import_hf": lambda i, out: python_m("trainer.import_hf", i["hf"], out),
    "trainer.evaluate": lambda i, out: python_m("trainer.evaluate", i["run"], "--train", i["train"], "--dev",
                                                i["dev"], "--seeds", "1", "--epochs", "1", "--workers", "1",
                                                "--device", "cpu", "-o", out),
    "run": lambda i, out: corpusprep("run", Path(__file__).parents[2] / "pipelines" / "demo.toml",
                                     "--run-dir", out, "--no-progress", "--workers", "1",
                                     "--set", f"input.paths=['{i['text']}']",
                                     *[a for s in SMALL_PIPELINE for a in ("--set", s)]),
}

# (the URL given, what the one line names)
URLS = {
    "no-such-bucket": ("s3://nosuchbucket-corpusprep/x", "s3://nosuchbucket-corpusprep: no such bucket;"),
    "no-bucket-name": ("s3:///x", "s3://x: no such bucket (bucket names are"),
    "scheme-alone": ("s3://", "s3://: no bucket name"),  # `s3:` to pathlib: refused where it is written
    "capital-bucket": ("s3://BKT/x", "s3://BKT: no such bucket (bucket names are"),
    "newline-in-key": (f"s3://{S3_BUCKET}/a\nb", f"s3://{S3_BUCKET}/a\\nb: a control character"),
    "glob-in-key": (f"s3://{S3_BUCKET}/out-*", f"s3://{S3_BUCKET}/out-*: an output may not hold a glob"),
}


# A command that joins a name to the folded URL before it writes (`s3:` / `.work`; `s3:/x` is a bucket, so a
# file's record beside it is `s3:/.x.done.json`) meets a bucket name no store allows first: one line too; and
# `sentences` checks its file name first.
NAMED_AS = {("trainer.run", "scheme-alone"): "s3://.work/run.json: not a bucket name",
            ("sentences", "no-bucket-name"): "s3://.x.done.json: not a bucket name",
            ("sentences", "scheme-alone"): "--output s3://: ends in a slash"}


def objects() -> list[str]:
    """Every object of the test bucket, listed afresh."""
    fs = storage.store_for(f"s3://{S3_BUCKET}").fs(f"s3://{S3_BUCKET}")[0]
    fs.invalidate_cache()
    return sorted(fs.find(S3_BUCKET))


@pytest.mark.slow  # 9 commands x 6 URLs in this process, and the world (~25 s, loaded machine)
def test_every_command_refuses_a_url_no_store_can_hold_in_one_line(s3_server, inputs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a folder named `s3:` would land here
    before = objects()
    failures = []
    for command, run in COMMANDS.items():
        for case, (given, named) in URLS.items():
            named = NAMED_AS.get((command, case), named)
            done = run(inputs, given)
            lines = done.err.strip().splitlines()
            if done.code != 2 or len(lines) != 1 or named not in lines[0] or "Traceback" in done.err:
                failures.append(f"{command} {case}: exit {done.code}: {done.err.strip()[-400:]!r}")
    assert not failures, "\n".join(failures)
    assert objects() == before  # nothing written to the store (a glob's key, a lease)
    assert os.listdir(tmp_path) == []  # nor here


@pytest.mark.slow  # a vocab to S3 and three commands in this process (3 s)
def test_a_url_is_named_with_its_two_slashes_in_every_message(s3_server, tmp_path):
    """pathlib folds `s3://b/k` into `s3:/b/k`; every message passes `errors.printable`, which gives a URL of
    the storage seam's schemes its `//` back (the records' own names and `validate`'s lines included)."""
    url = f"s3://{S3_BUCKET}/messages-{os.getpid()}"
    text = tmp_path / "text.txt"
    text.write_text("".join(f"Document {i} says a few words. And some more.\n\n" for i in range(60)))
    assert corpusprep("vocab", text, "-o", f"{url}/vocab", "--vocab-size", "120", "--no-progress").code == 0
    storage.write_bytes(f"{url}/vocab/vocab.txt", b"[PAD]\n")  # shorter than its manifest says
    pairs = tmp_path / "pairs"
    said = [corpusprep("validate", f"{url}/vocab"),
            corpusprep("build-pairs", text, "--vocab", f"{url}/vocab", "-o", pairs, "--no-progress")]
    for done in said:
        assert done.code == 1 and f"{url}/vocab" in done.err, done.err
        assert "s3:/" not in done.err.replace("s3://", ""), done.err
    assert f"{url}/vocab/vocab.txt: 6 bytes, manifest says" in said[1].err


HOSTILE = ["*", "?", "[", "]", "{a,b}", "\n", "\r", "\t", "\x00", "\x7f", "\u2028", "/", "//", ".", "..",
           "%2F", " ", "~", "é", "#", "\\", "A", "-", ":", "s3://", "**"]


def mutated(rng, url: str) -> str:
    """`url` with one to three hostile edits: a character or piece inserted, replaced or a part removed."""
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len("s3:"), len(url) + 1)  # the scheme kept: the seam's object-store side
        piece = rng.choice(HOSTILE)
        head, tail = url[:at], url[at:]
        url = rng.choice([head + piece + tail, head + piece + tail[1:], head + tail[2:]])
    return url


@pytest.mark.slow  # 2 s of rounds, at least 10 (5 s on a loaded machine): a lease, a write, a removal each
def test_hostile_output_urls_write_where_they_say_or_are_refused(s3_server, tmp_path, monkeypatch):
    """A seeded random sequence (bounded in time) of mutated output URLs through the seam's writes (the
    writer's lease, a file, a removal of the tree): each is refused in one line (a CorpusprepError) or
    touches only the objects under its own key; objects beside it (a sibling prefix, a longer name, a
    parent's file) are never changed or removed, and nothing lands in the working directory but where a
    plain relative path says."""
    from corpusprep.engine.lock import exclusive_dir
    from corpusprep.engine.urls import split_url
    from corpusprep.errors import CorpusprepError

    monkeypatch.chdir(tmp_path)
    rng = random.Random(int(os.environ.get("CORPUSPREP_FUZZ_SEED", "39")))
    base = f"{S3_BUCKET}/hostile-{os.getpid()}"
    victims = {f"{base}/out-other/a": b"1", f"{base}/outx": b"2", f"{base}/parent.bin": b"3",
               f"{base}/o/u/t/b": b"4", f"{base}/out/../a": b"5"}  # (`..`: a key, to S3)
    fs = storage.store_for(f"s3://{base}").fs(f"s3://{base}")[0]
    deadline, rounds = time.monotonic() + 2, 0
    while time.monotonic() < deadline or rounds < 10:
        rounds += 1
        for key, data in victims.items():
            fs.pipe_file(key, data)  # (again: a URL that holds one may remove it)
        given = mutated(rng, f"s3://{base}/out")
        before = objects()
        try:
            with exclusive_dir(given):
                storage.write_bytes(storage.join(given, "f.bin"), b"x")
                storage.remove_tree(given)
        except CorpusprepError as error:
            assert "\n" not in str(error), repr(given)
        key = split_url(given)[1] if storage.scheme_of(given) else "\0"  # a local path: no object at all
        for name in sorted(set(objects()) ^ set(before)):  # created or removed: under its own key only
            assert name == key or name.startswith(key + "/"), (given, name)
        fs.invalidate_cache()
        for name, data in victims.items():
            assert name.startswith(key + "/") or fs.cat_file(name) == data, (given, name)
    fs.rm(base, recursive=True)
