"""Bytes in, lines out: transparent decompression (by magic bytes), binary sniffing, UTF-8 decoding that
repairs and counts bad bytes. Everything streams in fixed-size blocks, so memory stays flat."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import re
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import BinaryIO

from corpusprep.engine import storage
from corpusprep.read.document import ReadStats

BLOCK = 1 << 20
SALVAGE = 4096  # read size near a damaged compressed stream: the most good text lost before the damage
SNIFF = 1024
BOM = b"\xef\xbb\xbf"
REPLACEMENT = "\ufffd".encode()

COMPRESSION_MAGIC = {
    b"\x1f\x8b": "gz",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bz2",
    b"\x28\xb5\x2f\xfd": "zst",
}
COMPRESSION_SUFFIXES = {".gz", ".xz", ".bz2", ".zst"}
BINARY_MAGIC = {
    b"\x89PNG": "PNG image",
    b"\xff\xd8\xff": "JPEG image",
    b"GIF8": "GIF image",
    b"%PDF": "PDF document",
    b"PK\x03\x04": "ZIP archive",
    b"\x7fELF": "ELF executable",
    b"\xff\xfe": "UTF-16 text (re-encode as UTF-8)",
    b"\xfe\xff": "UTF-16 text (re-encode as UTF-8)",
    # model files: their text-like parts (a safetensors JSON header, pickled names) must not become corpus
    b"\x93NUMPY": "a NumPy array (.npy)",
    b"\x89HDF\r\n\x1a\n": "an HDF5 file (tf_model.h5)",
    b"GGUF": "GGUF model weights",
    **{b"\x80" + bytes([protocol]): "a Python pickle (torch.save, .pkl)" for protocol in range(2, 6)},
}
# safetensors: an 8-byte little-endian header length, then the JSON header ({"name": {"dtype": ...}})
_SAFETENSORS = re.compile(rb"(?!\x00{4})[\x00-\xff]{4}\x00{4}\{\s*\"", re.DOTALL)
# Control bytes that never appear in text (tab, newlines, form feed and escape do).
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\x0c\x1b")
STREAM_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


class Unreadable(Exception):
    """An input that cannot be read to the end; the message names the file and position."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class Unopenable(Unreadable):
    """A file the OS will not open (permission, vanished): a usage error, exit 2, like a missing path."""


# "BZh" alone is ASCII, so text may begin with it: a bzip2 stream goes on with its level (1-9) and the magic
# of its first block (the digits of pi) or, when empty, of its end.
_BZ2_HEADER = re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)")
MAGIC_BYTES = 10  # enough for the longest check


def compression_of(head: bytes) -> str | None:
    """The compression whose magic bytes `head` (the first MAGIC_BYTES) starts with, or None."""
    kind = next((name for magic, name in COMPRESSION_MAGIC.items() if head.startswith(magic)), None)
    return None if kind == "bz2" and not _BZ2_HEADER.match(head) else kind


def open_file(path: Path) -> BinaryIO:
    """The one place an input file is opened, through the storage seam (tests simulate unreadable files
    by replacing `open` in corpusprep.engine.storage)."""
    try:
        return storage.open_file(path, "rb")
    except OSError as error:
        raise Unopenable("unreadable", f"{path}: cannot open: {error.strerror or error}") from error


def _zstd(raw: BinaryIO) -> BinaryIO:
    import pyarrow as pa  # here, not at the top: only a .zst input needs it (~0.1 s of start-up)

    return pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd")


DECOMPRESSORS = {
    "gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    "xz": lzma.LZMAFile,
    "bz2": bz2.BZ2File,
    "zst": _zstd,
}


def stream_errors(kind: str | None) -> tuple[type[BaseException], ...]:
    """What reading a `kind` stream raises when the stream is truncated or corrupt."""
    if kind != "zst":
        return STREAM_ERRORS
    import pyarrow as pa

    return (*STREAM_ERRORS, pa.ArrowException)


@contextlib.contextmanager
def open_decompressed(path: Path) -> Iterator[tuple[BinaryIO, str | None]]:
    """The file's bytes, decompressed when its magic bytes say gz/xz/bz2/zst (whatever the extension)."""
    with open_file(path) as raw:
        try:
            kind = compression_of(raw.read(MAGIC_BYTES))
            raw.seek(0)
        except OSError as error:
            raise Unreadable("unreadable", f"{path}: byte 0: read error: {error}") from error
        yield (DECOMPRESSORS[kind](raw) if kind else raw), kind


def read_blocks(stream: BinaryIO, path: Path, kind: str | None) -> Iterator[bytes]:
    """Blocks of BLOCK bytes; a truncated or corrupt stream becomes Unreadable with the byte offset."""
    offset = 0
    errors = stream_errors(kind)
    while True:
        try:
            block = stream.read(BLOCK)
        except errors as error:
            if kind:
                offset, error = yield from _reread_to_damage(path, offset, errors, error)
                if error is None:  # the second reading went through: the first failure was transient
                    return
            what = f"truncated or corrupt {kind} stream" if kind else "read error"
            raise Unreadable("unreadable", f"{path}: byte {offset}: {what}: {error}") from error
        if not block:
            return
        offset += len(block)
        yield block


def _reread_to_damage(
    path: Path, offset: int, errors: tuple[type[BaseException], ...], error: BaseException
) -> Generator[bytes, None, tuple[int, BaseException | None]]:
    """A decompressor's failed read returns none of what it decompressed before the damage (up to a BLOCK of
    good text): decompress the file again to `offset`, then yield what follows SALVAGE bytes at a time, so
    at most SALVAGE bytes before the damage are lost. Returns the new offset and the error (None: none)."""
    with open_decompressed(path) as (stream, _):
        try:
            done = offset
            while done > 0:
                skipped = stream.read(min(BLOCK, done))
                if not skipped:  # the file changed since: nothing to salvage
                    return offset, error
                done -= len(skipped)
            while block := stream.read(SALVAGE):
                offset += len(block)
                yield block
        except errors as again:
            return offset, again
    return offset, None


def sniff_binary(head: bytes) -> str | None:
    """Why `head` (the first KiB) looks like a binary file, or None for text."""
    for magic, what in BINARY_MAGIC.items():
        if head.startswith(magic):
            return what
    if not head:
        return None
    if _SAFETENSORS.match(head):
        return "safetensors model weights"
    # Random bytes are ~10% control bytes and mostly invalid UTF-8; text with a few NULs is neither.
    # Demand a dozen or so of each before judging, so a short text with a stray NUL stays text.
    size = len(head)
    control = size - len(head.translate(None, _CONTROL))
    invalid = head.decode(errors="replace").count("\ufffd")
    if control > 0.3 * size or (control > max(0.05 * size, 12) and invalid > max(0.02 * size, 12)):
        return f"binary content ({control / size:.0%} control bytes)"
    return None


def _decode(chunk: bytes, offset: int, path: Path, stats: ReadStats) -> str:
    """UTF-8 text of `chunk`; invalid sequences become U+FFFD and are counted, NUL bytes are dropped; line
    ends (CRLF, and CR alone: old Mac files) become LF."""
    try:
        text = chunk.decode()
    except UnicodeDecodeError as error:
        text = chunk.decode(errors="replace")
        # Replacements made = U+FFFD in the result minus those already (validly) in the input.
        replaced = text.count("\ufffd") - chunk.count(REPLACEMENT)
        stats.invalid_utf8 += replaced
        stats.warn("invalid_utf8", f"{path}: byte {offset + error.start}: invalid UTF-8 "
                                   f"({replaced} sequence(s) in this block replaced by U+FFFD)")
    if "\0" in text:
        nuls = text.count("\0")
        stats.nul_bytes += nuls
        first = offset + chunk.find(b"\0")
        stats.warn("nul_bytes", f"{path}: byte {first}: {nuls} NUL byte(s) removed")
        text = text.replace("\0", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


class Piece(str):
    """A piece of a line longer than the document size bound: the line goes on in the next item. Lines are
    numbered by `numbered`, which counts a line once however many pieces it came in."""

    __slots__ = ()


def numbered(lines: Iterator[str]) -> Iterator[tuple[int, str]]:
    """(1-based line number, line or piece) for the lines of `iter_lines`."""
    lineno = 1
    for line in lines:
        yield lineno, line
        if type(line) is not Piece:
            lineno += 1


def utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


def cut_bytes(data: bytes, limit: int) -> list[bytes]:
    """`data` in pieces of at most `limit` (>= 4) bytes: each cut after the last space of the piece's second
    half where there is one, else at a character boundary (never inside a UTF-8 sequence)."""
    pieces = []
    start = 0
    while len(data) - start > limit:
        end = start + limit
        space = data.rfind(b" ", start + limit // 2, end)
        if space >= 0:
            end = space + 1
        else:
            while data[end] & 0xC0 == 0x80 and end > start + 1:  # data[end] continues a character
                end -= 1
        pieces.append(data[start:end])
        start = end
    pieces.append(data[start:])
    return pieces


def _cut_line(line: str, limit: int) -> Iterator[str]:
    """A decoded line over `limit` bytes as pieces (all but the last a Piece); a shorter line as it is."""
    if utf8_size(line) <= limit:
        yield line
        return
    *pieces, last = cut_bytes(line.encode(), limit)
    for piece in pieces:
        yield Piece(piece.decode())
    yield last.decode()


def _last_line_end(block: bytes) -> int:
    """Where `block` is cut: after its last LF, or its last CR that is not its final byte (a CR at the end
    may be the first half of a CRLF split between two blocks); 0 when it holds no line end."""
    return max(block.rfind(b"\n"), block.rfind(b"\r", 0, len(block) - 1)) + 1


def iter_lines(
    blocks: Iterator[bytes], path: Path, stats: ReadStats, limit: int | None = None
) -> Iterator[str]:
    """Lines without their line ending (LF, CRLF or CR; a leading BOM is dropped). Blocks are cut after their
    last line end, so a multi-byte character is never split. A line longer than `limit` bytes comes in
    pieces of at most `limit` bytes (`Piece`s but the last; `numbered` counts them as one line), so memory
    holds at most `limit` bytes of a line plus a block, whatever the line's length."""
    offset = 0  # byte offset of pending[0]
    pending: list[bytes] = []
    held = 0  # bytes in pending
    first = True
    for block in blocks:
        stats.bytes += len(block)
        if first:
            first = False
            if block.startswith(BOM):
                block, offset = block[3:], 3
        cut = _last_line_end(block)
        if not cut:
            pending.append(block)
            held += len(block)
            if limit is not None and held > limit:  # a line longer than the bound: hand on its pieces now
                *pieces, rest = cut_bytes(b"".join(pending), limit)
                for piece in pieces:
                    yield Piece(_decode(piece, offset, path, stats))
                    offset += len(piece)
                pending, held = [rest], len(rest)
            continue
        pending.append(block[:cut])
        chunk = b"".join(pending) if len(pending) > 1 else pending[0]
        pending = [block[cut:]] if cut < len(block) else []
        held = len(block) - cut
        lines = _decode(chunk, offset, path, stats).split("\n")
        offset += len(chunk)
        lines.pop()  # the chunk ends with a line end: the last piece is empty
        if limit is None or len(chunk) <= limit:  # no line of it can be longer: the fast path
            del chunk
            yield from lines
        else:
            del chunk
            for line in lines:
                yield from _cut_line(line, limit)
    if pending:
        tail = b"".join(pending)
        pending.clear()
        for line in _decode(tail, offset, path, stats).split("\n"):
            yield from (_cut_line(line, limit) if limit is not None else (line,))
