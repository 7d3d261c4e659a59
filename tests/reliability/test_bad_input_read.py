"""Bad-input promises of the read stage: every bad input is repaired and counted, skipped and counted with
its file and position, or fails with one clear error naming them. Counts always add up."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import tracemalloc
import zlib
from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.engine import local_store
from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError, InputError
from corpusprep.read import ReadOptions, ReadStats, iter_documents
from corpusprep.read.streams import BLOCK
from tests.read.helpers import check_counts, read_all

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 8


def many_docs(n: int) -> str:
    """n distinct documents of ~4 KB of poorly compressible words (so compressed files span many blocks)."""
    rng = rng_for(0, "test-read", n)
    words = ["".join(chr(97 + c) for c in rng.integers(0, 26, size=rng.integers(2, 9))) for _ in range(4000)]
    picks = rng.integers(0, len(words), size=(n, 700))
    return "".join(f"Doc {i}. " + " ".join(words[j] for j in row) + ".\n\n" for i, row in enumerate(picks))


def test_invalid_utf8_in_the_middle_of_a_document(tmp_path):
    data = b"Before the bad byte, " + b"\xe9t\xe9 (latin-1)" + b", after it.\n\nNext doc.\n"
    (tmp_path / "mixed.txt").write_bytes(data)
    docs, stats = read_all(tmp_path / "mixed.txt")
    assert [d.text for d in docs] == ["Before the bad byte, \ufffdt\ufffd (latin-1), after it.", "Next doc."]
    assert stats.invalid_utf8 == 2
    assert stats.examples["invalid_utf8"][0].startswith(f"{tmp_path / 'mixed.txt'}: byte 21: invalid UTF-8")


def test_nul_bytes_are_stripped_and_counted(tmp_path):
    (tmp_path / "nul.txt").write_bytes(b"Te\x00xt with\x00\x00 NULs.\n\n\x00\n\nOk.\n")
    docs, stats = read_all(tmp_path / "nul.txt")
    assert [d.text for d in docs] == ["Text with NULs.", "Ok."]
    assert stats.nul_bytes == 4 and stats.skipped == {}  # a line holding only a NUL is a blank line
    assert stats.examples["nul_bytes"] == [f"{tmp_path / 'nul.txt'}: byte 2: 4 NUL byte(s) removed"]


def test_json_escaped_nul_and_lone_surrogate_are_repaired(tmp_path):
    (tmp_path / "esc.jsonl").write_text('{"text": "a\\u0000b \\ud800 c \\ud83d\\ude00"}\n')
    docs, stats = read_all(tmp_path / "esc.jsonl")
    assert docs[0].text == "ab \ufffd c 😀"
    assert stats.nul_bytes == 1 and stats.invalid_utf8 == 1
    docs[0].text.encode()  # must be encodable for the tokenizer and Parquet


@pytest.mark.slow
def test_50_mb_file_without_newline(tmp_path):
    size = 50 * 2**20
    path = tmp_path / "one_line.txt"
    with open(path, "wb") as f:
        for _ in range(size // 2**20):
            f.write(b"word " * (2**20 // 5) + b"w" * (2**20 % 5))
    tracemalloc.start()
    try:
        docs, stats = read_all(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # cut into parts of at most the document bound (16 MB), every character kept
    assert len(docs) == 4 and sum(len(d.text) for d in docs) == size == stats.bytes
    assert all(len(d.text) <= 16_000_000 for d in docs) and stats.documents_cut == 1
    assert peak < 2.5 * size  # the parts kept here and a part's bytes, not the file many times over


def test_zero_byte_file_is_skipped_under_every_policy(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "full.txt").write_text("Text.\n")
    for policy in ("auto", "skip", "fail"):
        docs, stats = read_all(tmp_path, on_error=policy)
        assert [d.id for d in docs] == ["full.txt:0"]
        assert stats.skipped_files == {"empty_file": 1} and stats.files == 1
        assert stats.examples["empty_file"] == [f"{tmp_path / 'empty.txt'}: empty file"]


@pytest.mark.parametrize("png_name", ["image.png", "looks_like_text.txt"])
def test_png_among_text_files_is_skipped_or_fails(tmp_path, png_name):
    (tmp_path / "a.txt").write_text("Doc a.\n")
    (tmp_path / png_name).write_bytes(PNG)
    (tmp_path / "z.txt").write_text("Doc z.\n")
    docs, stats = read_all(tmp_path)
    assert [d.id for d in docs] == ["a.txt:0", "z.txt:0"]
    assert stats.skipped_files == {"binary": 1} and stats.files == 2
    assert stats.examples["binary"] == [f"{tmp_path / png_name}: skipped: looks like PNG image, not text"]
    with pytest.raises(DataError, match=f"{png_name}: byte 0: PNG image, not text"):
        read_all(tmp_path, on_error="fail")


BAD_JSONL = [
    '{"text": "Good one."}',
    '{"text": "unterminated',
    '{"title": "no text field"}',
    '{"text": null}',
    '{"text": 42}',
    '["a", "list"]',
    '{"text": " \\n\\t "}',
    '{"text": "Good two."}',
]


def test_bad_jsonl_lines_are_skipped_and_counted_with_line_numbers(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD_JSONL) + "\n")
    docs, stats = read_all(path)
    assert [(d.id, d.text) for d in docs] == [("bad.jsonl:0", "Good one."), ("bad.jsonl:7", "Good two.")]
    assert stats.documents_seen == 8
    assert stats.skipped == {"invalid_json": 2, "missing_text_field": 1, "null_text": 1, "non_string_text": 1,
                             "empty_document": 1}
    assert stats.examples["invalid_json"][0].startswith(f"{path}:2: not valid JSON (")
    assert stats.examples["invalid_json"][1] == f"{path}:6: not a JSON object (list)"
    assert stats.examples["missing_text_field"] == [f"{path}:3: no field 'text'"]
    assert stats.examples["null_text"] == [f"{path}:4: field 'text' is null"]
    assert stats.examples["non_string_text"] == [f"{path}:5: field 'text' is int, not a string"]
    assert stats.examples["empty_document"] == [f"{path}:7: empty or whitespace-only document"]
    assert json.loads(json.dumps(stats.to_dict()))["skipped"]["invalid_json"] == 2


def test_bad_jsonl_line_fails_under_fail(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD_JSONL) + "\n")
    stats = ReadStats()
    docs = iter_documents([path], ReadOptions(on_error="fail"), stats)
    assert next(docs).text == "Good one."
    with pytest.raises(DataError, match=r"bad\.jsonl:2: not valid JSON") as error:
        next(docs)
    assert error.value.exit_code == 1


def test_whitespace_only_document_is_skipped_even_under_fail(tmp_path):
    (tmp_path / "ws.jsonl").write_text('{"text": "   "}\n{"text": "\\t\\r\\n"}\n{"text": "Real."}\n')
    for policy in ("auto", "skip", "fail"):
        docs, stats = read_all(tmp_path / "ws.jsonl", on_error=policy)
        assert [d.id for d in docs] == ["ws.jsonl:2"] and stats.skipped == {"empty_document": 2}


def test_parquet_without_the_text_column(tmp_path):
    path = tmp_path / "wrong.parquet"
    pq.write_table(pa.table({"body": ["x"]}), path)
    with pytest.raises(DataError, match=r"wrong\.parquet: no column 'text' \(columns: body\)"):
        read_all(path)
    docs, stats = read_all(path, on_error="skip")
    assert docs == [] and stats.skipped_files == {"missing_text_column": 1}


def test_corrupt_parquet(tmp_path):
    (tmp_path / "junk.parquet").write_bytes(b"PAR1" + b"\x13" * 500)
    with pytest.raises(DataError, match=r"junk\.parquet: not a readable Parquet file"):
        read_all(tmp_path / "junk.parquet")
    _, stats = read_all(tmp_path / "junk.parquet", on_error="skip")
    assert stats.skipped_files == {"unreadable": 1}


@pytest.mark.slow  # ~3.2 s idle (all cases)
@pytest.mark.parametrize(
    ("suffix", "compress", "decompressor"),
    [
        (".gz", gzip.compress, partial(zlib.decompressobj, wbits=31)),
        (".xz", partial(lzma.compress, preset=1), lzma.LZMADecompressor),
    ],
)
def test_truncated_compressed_file(tmp_path, suffix, compress, decompressor):
    text = many_docs(1000)
    assert len(text.encode()) > 3 * BLOCK
    data = compress(text.encode())
    path = tmp_path / f"cut.txt{suffix}"
    (tmp_path / "next.txt").write_text("After.\n")
    for cut_at in (len(data) // 2, len(data) // 3 + 777, len(data) * 4 // 5):
        path.write_bytes(data[:cut_at])
        message = rf"cut\.txt\{suffix}: byte \d+: truncated or corrupt {suffix[1:]} stream"
        with pytest.raises(DataError, match=message):
            read_all(tmp_path)
        # Under skip, what was read before the cut stays read, the file counts as skipped, the next file is
        # read; and that is all of it: every document whole in what the cut file decompresses to, but one.
        docs, stats = read_all(tmp_path, on_error="skip")
        cut = [d for d in docs if d.id.startswith("cut")]
        assert [d.id for d in cut] == [f"cut.txt{suffix}:{i}" for i in range(len(cut))]
        readable = decompressor().decompress(data[:cut_at]).decode(errors="ignore")
        assert readable.count(".\n\n") - 1 <= len(cut) <= readable.count(".\n\n") > 300
        assert [d.text for d in cut] == text.split("\n\n")[: len(cut)]
        assert docs[-1].id == "next.txt:0"
        assert stats.skipped_files == {"unreadable": 1} and stats.files == 1


def test_unreadable_file_simulated_permission_error(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("A.\n")
    (tmp_path / "locked.txt").write_text("Secret.\n")
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith("locked.txt"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(local_store, "open", fake_open, raising=False)  # every local file opens there
    for policy in ("auto", "fail"):
        with pytest.raises(InputError, match=r"locked\.txt: cannot open: Permission denied") as error:
            read_all(tmp_path, on_error=policy)
        assert error.value.exit_code == 2
    docs, stats = read_all(tmp_path, on_error="skip")
    assert [d.id for d in docs] == ["a.txt:0"] and stats.skipped_files == {"unreadable": 1}
    assert stats.examples["unreadable"] == [f"{tmp_path / 'locked.txt'}: cannot open: Permission denied"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a chmod 000 file")
def test_unreadable_file_real_permission(tmp_path):
    path = tmp_path / "locked.txt"
    path.write_text("Secret.\n")
    path.chmod(0)
    try:
        with pytest.raises(InputError, match="Permission denied"):
            read_all(path)
        assert read_all(path, on_error="skip")[1].skipped_files == {"unreadable": 1}
    finally:
        path.chmod(0o644)


def test_directory_with_no_matching_files(tmp_path):
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "empty_dir" / ".hidden").write_text("x\n")
    with pytest.raises(InputError, match="empty_dir: directory has no input files") as error:
        iter_documents([tmp_path / "empty_dir"], ReadOptions())  # raised at the call, before iterating
    assert error.value.exit_code == 2
    with pytest.raises(InputError, match=r"nothing-\*\.txt: no files match"):
        iter_documents([str(tmp_path / "nothing-*.txt")], ReadOptions())
    with pytest.raises(InputError, match="no such file or directory"):
        iter_documents([tmp_path / "absent.txt"], ReadOptions())


def test_unknown_format_is_an_input_error():
    with pytest.raises(InputError, match="unknown input format 'csv'"):
        ReadOptions(format="csv")


SCRIPTS = [
    "中文文本，测试。日本語のテキスト。한국어 문장.",
    "النص العربي يُقرأ كما هو.",
    "Emoji 😀👍🏽🇩🇪 and ZWJ 👩‍👩‍👧 intact.",
]


def test_cjk_arabic_and_emoji_are_read_intact(tmp_path):
    (tmp_path / "a.txt").write_text("\n\n".join(SCRIPTS) + "\n")
    lines = [json.dumps({"text": s}, ensure_ascii=escaped) for s in SCRIPTS for escaped in (True, False)]
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n")
    pq.write_table(pa.table({"text": SCRIPTS}), tmp_path / "c.parquet")
    (tmp_path / "d.txt.gz").write_bytes(gzip.compress(("\n\n".join(SCRIPTS)).encode()))
    docs, stats = read_all(tmp_path)
    assert [d.text for d in docs] == SCRIPTS + [s for s in SCRIPTS for _ in (0, 1)] + SCRIPTS + SCRIPTS
    assert stats.invalid_utf8 == stats.nul_bytes == stats.warnings == 0


def test_counts_add_up_across_a_messy_directory(tmp_path):
    (tmp_path / "a.jsonl").write_text("\n".join(BAD_JSONL) + "\n")
    (tmp_path / "b.png").write_bytes(PNG)
    (tmp_path / "c.txt").write_bytes(b"")
    (tmp_path / "d.txt").write_bytes(b"One \xff.\n\n \n\nTwo\x00.\n")
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "e.parquet")
    stats = ReadStats()
    docs = list(iter_documents([tmp_path], ReadOptions(on_error="skip"), stats))
    check_counts(stats)
    assert (stats.files_seen, stats.files) == (5, 2)
    assert stats.skipped_files == {"binary": 1, "empty_file": 1, "missing_text_column": 1}
    assert len(docs) == stats.documents == 4 and stats.documents_seen == 10
    assert (stats.invalid_utf8, stats.nul_bytes) == (1, 1)
    assert stats.to_dict()["documents"] == 4


@pytest.mark.slow  # ~1.2 s idle
def test_a_file_name_that_is_not_utf8_is_named_one_way_everywhere(tmp_path):
    """Its warning, its skip, its error and the stats' examples all write `b\\xe9d.txt` (as its document
    ids do); Python's own rendering of the name (`b\\udce9d.txt`) used to appear beside it."""
    import subprocess
    import sys

    corpus = tmp_path / "in"
    corpus.mkdir()
    (corpus / "good.txt").write_text("A sentence. Another one.\n")
    bad = os.fsdecode(bytes(corpus) + b"/b\xe9d.txt")
    with open(bad, "wb") as f:
        f.write(b"\xff\xfeU\x00T\x00F\x00")  # UTF-16: skipped, or an error under fail
    command = [sys.executable, "-m", "corpusprep", "sentences", str(corpus), "--no-progress"]
    skipped = subprocess.run([*command, "-o", tmp_path / "s.txt", "--stats", tmp_path / "s.json"],
                             capture_output=True, text=True)
    failed = subprocess.run([*command, "-o", tmp_path / "f.txt", "--on-error", "fail"],
                            capture_output=True, text=True)
    assert skipped.returncode == 0 and failed.returncode == 1, skipped.stderr + failed.stderr
    examples = json.loads((tmp_path / "s.json").read_text())["read"]["examples"]
    for text in (skipped.stderr, failed.stderr, json.dumps(examples, ensure_ascii=False)):
        assert "\\udc" not in text and "\\ud" not in text.encode("unicode_escape").decode(), text
    for text in (skipped.stderr, failed.stderr, examples["binary"][0]):
        assert "b\\xe9d.txt" in text, text
    last = failed.stderr.splitlines()[-1]
    assert last.startswith(f"corpusprep: error: {corpus}/b\\xe9d.txt: byte 0: UTF-16")
