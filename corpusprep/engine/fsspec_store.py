"""Object storage (`s3://`, `gs://`) through fsspec: one `Store` for every scheme fsspec has a client for
(s3fs for S3 and S3-compatible servers, gcsfs for Google Cloud Storage), registered by scheme in
`storage.STORES`.

The clients configure themselves the standard way, so a user's existing setup works: for S3 botocore's
environment and files (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`,
`~/.aws/config`), for GCS Google's application default credentials. A client that is not installed is one
line naming the extra that brings it (`pip install 'corpusprep[s3]'`).

Paths come as `s3://bucket/key` or as the `s3:/bucket/key` pathlib folds it into; listings return the
folded `Path` (what stage code joins, names and makes relative), and `storage.url` writes it back as a URL.
Listings and the sizes, times and types they bring are fsspec's: cached for the process (its own writes
update the cache), so one run sees one state of the bucket and asks for each object once. An object store
has no rename and no directories: a write is a whole object put in one step (the seam's `Store.atomic_path`
stages it locally, then `put_file`, a PUT or a multipart upload, which readers see whole or not at all);
`replace` is a copy then a delete; `makedirs` and `rmdir` have nothing to do.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

from corpusprep.engine import urls
from corpusprep.engine.storage import Store
from corpusprep.engine.urls import split_url, url
from corpusprep.errors import CorpusprepError, UsageError, printable

# scheme -> the extra that installs its client (pyproject's optional dependencies)
EXTRAS = {"s3": "s3", "gs": "gcs", "gcs": "gcs"}
# the clients' exceptions that are no OSError (no credentials, no endpoint, a throttled or refused request)
_CLIENTS = ("botocore", "aiobotocore", "aiohttp", "google", "gcsfs", "s3fs")
# the store's answers that say the bucket is not there (S3's codes; gcsfs says so in its message)
_NO_BUCKET = ("NoSuchBucket", "InvalidBucketName")
# the errno of a client's OSError that has none (s3fs raises FileNotFoundError("Not Found")), by its type
_ERRNOS = {FileNotFoundError: errno.ENOENT, PermissionError: errno.EACCES, FileExistsError: errno.EEXIST,
           IsADirectoryError: errno.EISDIR, NotADirectoryError: errno.ENOTDIR}


def client_errors(method: Callable) -> Callable:
    """A client's failure as one line naming the URL, never a traceback: a missing bucket (exit 2), no
    credentials or an unreachable endpoint (exit 1). Other OSErrors (a missing object: FileNotFoundError,
    a refused one: PermissionError) pass as their own type, for the callers that handle them as a local file
    system's, with the errno and the URL the top-level message needs (s3fs gives neither)."""

    @functools.wraps(method)
    def call(self: FsspecStore, path: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, path, *args, **kwargs)
        except CorpusprepError:
            raise
        except OSError as error:
            raise _named(error, _url_among(path, args)) from error
        except Exception as error:
            if not type(error).__module__.startswith(_CLIENTS):
                raise
            where = _url_among(path, args)
            scheme, _ = split_url(where)
            raise CorpusprepError(f"{printable(url(where))}: {scheme}:// failed: {printable(str(error))} "
                                  "(credentials and endpoint: docs/manual/input.md)") from error

    return call


def _url_among(path: Any, args: tuple) -> Any:
    """The URL among a method's arguments: put_file's is its second."""
    return next((a for a in (path, *args) if isinstance(a, (str, Path)) and urls.scheme_of(a)), path)


def _named(error: OSError, where: Any) -> OSError | UsageError:
    """`error` with an errno and the URL; a bucket that is not there as one UsageError line."""
    if _client_code(error) in _NO_BUCKET or "bucket does not exist" in str(error).lower():
        scheme, rest = split_url(where)
        bucket = rest.partition("/")[0]  # named alone: whichever object of it was asked for first
        return UsageError(f"{scheme}://{printable(bucket)}: no such bucket{urls.bucket_hint(bucket)}; create "
                          "it or check the URL")
    if type(error) not in (OSError, *_ERRNOS) or (error.errno is not None and error.filename is not None):
        return error
    number = error.errno if error.errno is not None else _ERRNOS.get(type(error), errno.EIO)
    return type(error)(number, error.strerror or str(error) or os.strerror(number), url(where))


def _client_code(error: BaseException) -> str | None:
    """The store's error code (S3's `NoSuchBucket`) of the client error `error` was made from."""
    seen = error
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            return response.get("Error", {}).get("Code")
        seen = seen.__cause__ or seen.__context__
    return None


class FsspecStore(Store):
    """An fsspec file system per scheme, made on first use (one per process: workers make their own)."""

    def __init__(self) -> None:
        self._fs: dict[str, Any] = {}
        self._pid = os.getpid()

    def fs(self, path: Any, *, literal: bool = False, whole: bool = False) -> tuple[Any, str]:
        """(the file system for `path`'s scheme, the key in it); a URL no store can hold is one line
        (`urls.check`; `literal`: a path written, or listed from, which fsspec must not expand; `whole`: an
        object written)."""
        urls.check(path, literal=literal or whole, whole=whole)
        scheme, key = split_url(path)
        if self._pid != os.getpid():  # a forked child (a DataLoader worker): the parent's are not fork-safe
            self._fs, self._pid = {}, os.getpid()
        if scheme not in self._fs:
            self._fs[scheme] = _filesystem(scheme, path)
        return self._fs[scheme], key

    @staticmethod
    def path(scheme: str, key: str) -> Path:
        return Path(f"{scheme}:/{key}")

    def _paths(self, path: Any, keys: list[str]) -> list[Path]:
        scheme, _ = split_url(path)
        return sorted(self.path(scheme, key.rstrip("/")) for key in keys)

    def resolve(self, path: Any) -> Path:
        return self.path(*split_url(path))

    @client_errors
    def open(self, path: Any, mode: str = "rb", **kwargs: Any) -> IO:
        fs, key = self.fs(path, whole=any(c in mode for c in "wax+"))  # a write
        return fs.open(key, mode, **kwargs)

    @client_errors
    def read_range(self, path: Any, offset: int, length: int) -> bytes:
        """One ranged GET of just those bytes (a file object would read ahead a block of 5 MB)."""
        fs, key = self.fs(path)
        return fs.cat_file(key, start=offset, end=offset + length)

    @client_errors
    def put_file(self, local: Path, path: Any) -> None:
        fs, key = self.fs(path, whole=True)
        fs.put_file(os.fspath(local), key)

    @client_errors
    def list(self, path: Any) -> list[Path]:
        return self._paths(path, [info["name"] for info in self._ls(path)])

    def _ls(self, path: Any) -> list[dict]:
        """The entries under a prefix; none for a prefix without objects (a local empty directory's [])."""
        fs, key = self.fs(path)
        try:
            return fs.ls(key, detail=True)
        except FileNotFoundError:
            return []

    @client_errors
    def entries(self, path: Any) -> tuple[list[str], list[str]]:
        dirs, files = [], []
        for info in self._ls(path):
            name = info["name"].rstrip("/").rpartition("/")[2]
            (dirs if info["type"] == "directory" else files).append(name)
        return sorted(dirs), sorted(files)

    @client_errors
    def glob(self, path: Any, pattern: str) -> list[Path]:
        fs, key = self.fs(path, literal=True)
        return self._paths(path, fs.glob(f"{key}/{pattern}"))

    @client_errors
    def match(self, pattern: str) -> list[Path]:
        fs, key = self.fs(pattern)
        return self._paths(pattern, fs.glob(key))

    @client_errors
    def stat(self, path: Any) -> SimpleNamespace:
        """Size, modification time (ns) and the store's content tag (S3's ETag, GCS's md5/generation)."""
        fs, key = self.fs(path)
        info = fs.info(key)
        if info["type"] != "file":
            raise IsADirectoryError(21, "a directory (a prefix), not an object", url(path))
        modified = info.get("LastModified") or fs.modified(key)  # S3's listing has it: no second request
        tag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or info.get("generation") or ""
        return SimpleNamespace(st_size=int(info["size"]), st_mtime_ns=int(modified.timestamp() * 1e9),
                               tag=str(tag).strip('"'))

    @client_errors
    def is_dir(self, path: Any) -> bool:
        fs, key = self.fs(path)
        return fs.isdir(key)

    @client_errors
    def is_file(self, path: Any) -> bool:
        fs, key = self.fs(path)
        return fs.isfile(key)

    @client_errors
    def create_exclusive(self, path: Any, data: bytes) -> str:
        """Put `data` at `path` only where no object is (`If-None-Match: *`); FileExistsError if one is."""
        fs, key = self.fs(_conditional(path), whole=True)
        with _precondition_as_exists(path):
            return _tag(fs.pipe_file(key, data, mode="create"))

    @client_errors
    def read_tagged(self, path: Any, limit: int) -> tuple[bytes, str]:
        """(the object's bytes, its content tag), read afresh (not from the listing cache) and together:
        s3fs reads with If-Match on the tag it looked up, so an object rewritten between is
        FileExistsError, never bytes of one version with the tag of another."""
        fs, key = self.fs(_conditional(path))
        fs.invalidate_cache(key)
        with _precondition_as_exists(path):
            tag = self.stat(path).tag
            return self.read_bounded(path, limit), tag

    @client_errors
    def replace_if(self, path: Any, data: bytes, tag: str) -> str:
        """Put `data` at `path` only while the object there is still the one tagged `tag` (`If-Match`);
        FileExistsError when another write came between (S3's 412 PreconditionFailed)."""
        fs, key = self.fs(_conditional(path), whole=True)
        with _precondition_as_exists(path):
            return _tag(fs.pipe_file(key, data, IfMatch=f'"{tag}"'))

    def makedirs(self, path: Any) -> None:
        """No directories (a key's prefix exists while an object under it does): only the URL is checked, so
        that an output no store can hold is refused before anything is done."""
        urls.check(path, literal=True)

    @client_errors
    def replace(self, source: Any, target: Any) -> None:
        fs, key = self.fs(source, whole=True)
        fs.mv(key, self.fs(target, whole=True)[1])

    @client_errors
    def remove(self, path: Any, missing_ok: bool = False) -> None:
        fs, key = self.fs(path, literal=True)
        if not fs.isfile(key):  # a DELETE of no object succeeds: say so as a local file system would
            if missing_ok:
                return
            raise FileNotFoundError(2, "no such object", url(path))
        fs.rm_file(key)

    @client_errors
    def remove_tree(self, path: Any) -> None:
        fs, key = self.fs(path, literal=True)  # fsspec would remove whatever a glob character matches
        if fs.exists(key):
            fs.rm(key, recursive=True)

    def rmdir(self, path: Any) -> None:
        pass  # a prefix goes with its last object


def _conditional(path: Any) -> Any:
    """`path`, on a store whose conditional writes are wired here (S3's If-None-Match / If-Match through
    s3fs); another scheme is one line (gcsfs has if_generation_match: not wired, untested)."""
    scheme, _ = split_url(path)
    if scheme != "s3":
        raise UsageError(f"{printable(url(path))}: no writer's lease on {scheme}:// yet (conditional "
                         "writes are wired for s3:// only); write to s3:// or a local path")
    return path


@contextlib.contextmanager
def _precondition_as_exists(path: Any) -> Iterator[None]:
    """S3's 412 (a condition of the request did not hold) as FileExistsError: s3fs reports it so for a write's
    If-None-Match, as an EINVAL OSError for a write's If-Match, as FileExpired for a read's."""
    try:
        yield
    except FileExistsError:
        raise
    except OSError as error:
        if type(error).__name__ == "FileExpired" or (error.errno == errno.EINVAL
                                                     and "pre-condition" in str(error)):
            raise FileExistsError(errno.EEXIST, "changed by another writer", url(path)) from error
        raise


def _tag(response: Any) -> str:
    """The new object's content tag from a PUT's response (S3's ETag, quotes stripped)."""
    return str((response or {}).get("ETag", "")).strip('"')


def _filesystem(scheme: str, path: Any) -> Any:
    """fsspec's file system for `scheme`; a client that is not installed is one line naming the extra."""
    extra = EXTRAS.get(scheme, scheme)
    try:
        import fsspec

        return fsspec.filesystem(scheme, skip_instance_cache=True)  # its own: configured as the process is
    except ImportError as error:
        raise UsageError(f"{printable(url(path))}: {scheme}:// needs a client that is not installed "
                         f"({error.name or error}): pip install 'corpusprep[{extra}]'") from None
