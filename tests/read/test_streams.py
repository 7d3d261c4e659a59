"""Compression by magic bytes, decoding (BOM, CRLF, bad UTF-8, NUL), lines across block boundaries."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pyarrow as pa
import pytest

from corpusprep.read import streams
from corpusprep.read.streams import compression_of, sniff_binary
from tests.read.helpers import read_all

TEXT = "Erster Satz. Zweiter Satz.\nNext paragraph.\n\nSecond document — ünïcödé.\n"


def zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


COMPRESSORS = {"gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress, "zst": zstd}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
@pytest.mark.parametrize("name", ["corpus.txt.{kind}", "corpus.txt", "corpus"])
def test_compression_is_detected_by_magic_bytes(tmp_path, kind, name):
    path = tmp_path / name.format(kind=kind)
    path.write_bytes(COMPRESSORS[kind](TEXT.encode()))
    assert compression_of(path.read_bytes()[: streams.MAGIC_BYTES]) == kind
    docs, stats = read_all(path)
    assert [d.text for d in docs] == TEXT.strip().replace("\n\n", "\0").split("\0")
    assert stats.bytes == len(TEXT.encode())


def test_gzip_with_several_members_is_read_whole(tmp_path):
    path = tmp_path / "multi.gz"
    path.write_bytes(gzip.compress(b"One.\n\n") + gzip.compress(b"Two.\n"))
    docs, _ = read_all(path)
    assert [d.text for d in docs] == ["One.", "Two."]


def test_bom_and_crlf(tmp_path):
    path = tmp_path / "win.txt"
    path.write_bytes(b"\xef\xbb\xbfFirst line.\r\nSecond.\r\n\r\nNext doc.\r\n")
    docs, stats = read_all(path)
    assert [d.text for d in docs] == ["First line.\nSecond.", "Next doc."]
    assert stats.invalid_utf8 == 0


def test_invalid_utf8_is_replaced_counted_and_located(tmp_path):
    # Two bad sequences, plus a U+FFFD that was already in the text and must not be counted.
    data = "Ok line.\nAlready \ufffd here.\n".encode() + b"Bad \xff and \xc3( here.\n"
    (tmp_path / "bad.txt").write_bytes(data)
    docs, stats = read_all(tmp_path / "bad.txt")
    assert docs[0].text == "Ok line.\nAlready \ufffd here.\nBad \ufffd and \ufffd( here."
    assert stats.invalid_utf8 == 2 and stats.warnings == 1
    offset = data.index(b"\xff")
    assert stats.examples["invalid_utf8"] == [
        f"{tmp_path / 'bad.txt'}: byte {offset}: invalid UTF-8 "
        "(2 sequence(s) in this block replaced by U+FFFD)"
    ]


def test_lines_longer_than_a_block_and_characters_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(streams, "BLOCK", 7)  # every multi-byte character will straddle some block edge
    line = "日本語の文。عربي 😀 emoji."
    text = f"{line}\n" * 3 + "\n" + "x" * 50 + "\n\nlast"
    (tmp_path / "small.txt").write_text(text)
    docs, stats = read_all(tmp_path / "small.txt")
    assert [d.text for d in docs] == [f"{line}\n{line}\n{line}", "x" * 50, "last"]
    assert stats.invalid_utf8 == 0 and stats.bytes == len(text.encode())


@pytest.mark.parametrize(
    ("head", "binary"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", True),
        (b"%PDF-1.7\n", True),
        (b"\xff\xfeH\x00i\x00", True),
        (bytes(range(256)) * 4, True),
        ("Plain text, ünïcödé, 日本語.\n\tTabbed.\x0c\n".encode() * 20, False),
        (b"Some text with one stray NUL \x00 in it.\n" * 20, False),
        (b"", False),
    ],
)
def test_sniff_binary(head, binary):
    assert (sniff_binary(head[:1024]) is not None) == binary
