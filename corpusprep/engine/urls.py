"""URLs in the storage seam: which store a path belongs to (its scheme), how a URL is shown, and which URLs no
store can use (`check`: one line naming the URL, exit 2, before any request).

A path is a URL when it starts with `scheme:/`: `s3://bucket/key` as a user types it, or the same after
pathlib folded its `//` (`s3:/bucket/key`: typer and argparse hand the commands `Path`s). So `s3:///key`
reads as `s3://key`, the folded form of both. A local path never starts so (`notes:2024.txt`, `C:/x`).
"""

from __future__ import annotations

import os
import re
from typing import Any

from corpusprep.errors import UsageError, printable, user_path

# `s3://b/k`, and the same URL after pathlib folded its `//` (`s3:/b/k`): never a local folder named `s3:`
SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):/")
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):/+")
_BARE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):/*")  # `s3://` alone, which pathlib folds into `s3:`
# what the object stores accept as a bucket name (botocore's characters, a letter or digit at each end as
# every store asks, the buckets of S3's old rule included) ...
_BUCKET = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,253}[A-Za-z0-9])?")
# ... and what a bucket created today may be called (S3's and GCS's common rule): the hint of a refusal
_NEW_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_GLOB = re.compile(r"[*?[]")  # fsspec expands these in a path it is handed (a removal too)
# a line break would split every message naming the key; the others are no name a user means
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def scheme_of(path: str | os.PathLike) -> str | None:
    """The URL scheme of `path` (`"s3"` for `s3://bucket/key`), None for a plain local path."""
    match = SCHEME.match(os.fspath(path))
    return match[1].lower() if match else None


def url(path: str | os.PathLike) -> str:
    """`path` as text to record or show: a URL with its `//` back (pathlib folds `s3://b/k` into `s3:/b/k`),
    a local path (or a `file://` URL) as it is."""
    text = os.fspath(path)
    scheme = scheme_of(text)
    if scheme is None or scheme == "file":
        return text
    return f"{scheme}://{SCHEME.sub('', text, count=1).lstrip('/')}"


def bare_scheme(path: str | os.PathLike) -> str | None:
    """The scheme of a URL with nothing after it (`s3://`, folded by pathlib into `s3:`), else None."""
    match = _BARE.fullmatch(os.fspath(path))
    return match[1].lower() if match else None


def unwrap(path: Any) -> str:
    """A local path's text, a `file://` URL's path part."""
    text = os.fspath(path)
    return re.sub(r"^[A-Za-z]+:(//)?", "", text) if scheme_of(text) == "file" else text


def split_url(path: Any) -> tuple[str, str]:
    """(scheme, "bucket/key") of `s3://bucket/key` or `s3:/bucket/key`, the key without a trailing `/`."""
    text = os.fspath(path)
    found = _URL.match(text)
    if found is None:
        raise UsageError(f"{printable(text)}: not a URL (scheme://bucket/key)")
    return found[1].lower(), text[found.end() :].rstrip("/")


def check(path: Any, *, literal: bool = False, whole: bool = False) -> None:
    """Refuse, in one line naming the URL (exit 2), a URL no object store can hold: no bucket, a bucket name
    of characters no client accepts, a control character (a line break would split every message naming
    it); and where it is taken literally (written, removed, listed from), a glob character (fsspec expands
    `*`, `?`, `[` into the objects they match: a removal would reach them) or a `.` / `..` part (an object
    store has no relative names); `whole`: an object written whole, which needs a key (`s3://b` is none)."""
    scheme, rest = split_url(path)
    bucket, _, key = rest.partition("/")
    head, _, name = url(path).rpartition("/")
    shown = printable(f"{head}/{user_path(name).name}" if name else url(path))  # a temporary name: its file
    if not bucket:
        raise UsageError(f"{shown}: no bucket name ({scheme}://BUCKET/KEY)")
    if _CONTROL.search(rest):
        raise UsageError(f"{shown}: a control character in the URL; name the object without it")
    if not _BUCKET.fullmatch(bucket):
        raise UsageError(f"{shown}: not a bucket name ({printable(bucket)}: {bucket_rule()})")
    if whole and not key:
        raise UsageError(f"{shown}: a bucket, not an object; name a file in it ({scheme}://BUCKET/KEY)")
    if not literal:
        return
    if _GLOB.search(key):
        raise UsageError(f"{shown}: an output may not hold a glob character (* ? [): name it literally")
    if any(part in (".", "..", "") for part in key.split("/")) and key:
        raise UsageError(f"{shown}: an output on an object store may not hold an empty, `.` or `..` part")


def bucket_rule() -> str:
    return "3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit at each end"


def bucket_hint(bucket: str) -> str:
    """Why a bucket may not be found: its name breaks the rule of buckets created today."""
    return "" if _NEW_BUCKET.fullmatch(bucket) else f" (bucket names are {bucket_rule()})"
