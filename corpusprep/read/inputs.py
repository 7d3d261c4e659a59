"""Input arguments (files, directories, globs) -> a sorted list of files, each with a stable source name."""

from __future__ import annotations

import fnmatch
import glob
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from corpusprep.engine import manifest, storage
from corpusprep.engine.outputs import OUTPUT_KINDS, is_artifact_dir, recognise
from corpusprep.errors import InputError

MARKER_SUFFIX = ".done.json"  # engine completion markers; temp files and locks are hidden (".name")
log = logging.getLogger("corpusprep.read")
_warned: set[str] = set()


def printable_source(source: str) -> str:
    """`source` with the bytes of a file name that is not valid UTF-8 (which Python keeps as surrogates) as
    \\xNN escapes: document ids must be UTF-8 to be hashed and written. Warns once per name."""
    try:
        source.encode("utf-8")
        return source
    except UnicodeEncodeError:
        escaped = source.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        if escaped not in _warned:
            _warned.add(escaped)
            log.warning(f"{escaped}: file name is not valid UTF-8; read, its document ids escaped as here")
        return escaped


class RecordedIds(str):
    """The source name of a file whose documents carry their ids (an output that is a corpus: curate's kept
    documents): the reader takes each document's `id` field instead of numbering it."""


def corpus_output(directory: Path) -> list[tuple[Path, str]] | None:
    """The files to read of a finished corpusprep output that is a corpus (its kind's `corpus` patterns,
    among the files its manifest owns, each present with its size: `manifest.require`); None for any other
    directory (another output is refused by the walk, as before)."""
    found = manifest.read_manifest(directory) if storage.is_file(directory / manifest.MANIFEST) else None
    kind = OUTPUT_KINDS.get(found["kind"]) if found is not None else None
    if kind is None or not kind.corpus:
        return None
    record = manifest.require(directory, kind.name)
    names = sorted(n for n in record["files"] if any(fnmatch.fnmatchcase(n, p) for p in kind.corpus))
    if not names:
        raise InputError(f"{storage.url(directory)}: holds no documents (every one was removed)")
    return [(manifest.inside(directory, name), RecordedIds(name)) for name in names]


def _wanted(name: str) -> bool:
    return not name.startswith(".") and not name.endswith(MARKER_SUFFIX)


# Signs of a model directory: Hugging Face's save_pretrained (weights beside config.json, or a tokenizer's
# files), safetensors anywhere. Its vocab.txt would become a document, model.safetensors' JSON header text.
# (WEIGHT_FILES: the weights such a directory may hold besides *.safetensors: PyTorch, TF, Flax, ONNX)
WEIGHT_FILES = {"pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", "model.ckpt.index", "model.onnx"}
HF_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
HF_VOCAB = ("vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model",
            "tokenizer.model")


def not_corpus(directory: Path, subdirs: list[str], files: list[str]) -> str | None:
    """What `directory` (whose listing is `subdirs`, `files`) holds when it is a model or an output rather
    than a corpus: a corpusprep output (artifact, pipeline or training run, checkpoint), a Hugging Face model
    or tokenizer, safetensors weights; None for anything else. Never read as corpus."""
    if is_artifact_dir(directory):
        return "a corpusprep output (vocab, pairs, shards...)"
    found = recognise(directory, strict=True)
    if found is not None:
        return found.what
    names = set(files)
    if "checkpoints" in subdirs and "metrics.jsonl" in names:
        return "a training run"
    weights = any(name.endswith((".safetensors", ".index.json")) for name in files) or names & WEIGHT_FILES
    if weights and "config.json" in names:
        return "a Hugging Face model"
    if weights:
        return "model weights"
    if names.intersection(HF_TOKENIZER) and names.intersection(HF_VOCAB):
        return "a Hugging Face tokenizer"
    return None


def _walk(root: Path, passed_over: list[tuple[Path, str]], refuse: bool = True) -> Iterator[Path]:
    """The files to read below `root`, sorted later; directories that are no corpus are passed over (noted
    in `passed_over` with what they hold), `root` itself refused (`refuse`: it was given by name)."""
    for directory, subdirs, files in storage.walk(root):
        what = not_corpus(Path(directory), subdirs, files)
        if what is not None:
            if refuse and Path(directory) == root:
                raise InputError(f"{storage.url(root)}: holds {what}, not a corpus")
            passed_over.append((Path(directory), what))
            subdirs[:] = []  # never read a run's (or a model's) files as corpus
            continue
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]  # hidden trees: .git, .work, caches
        for name in files:
            # regular files only: a FIFO or a device would block the reader forever
            if _wanted(name) and storage.is_file(Path(directory, name)):
                yield Path(directory, name)


def _listing(directory: Path) -> tuple[list[str], list[str]]:
    """(subdirectories, other names) of `directory`, as os.walk lists them."""
    return storage.entries(directory)


def _glob_base(pattern: str) -> Path:
    """The leading directories of a glob that contain no wildcard: ids are relative to it."""
    parts = []
    for part in Path(pattern).parts[:-1]:
        if glob.has_magic(part):
            break
        parts.append(part)
    return Path(*parts) if parts else Path(".")


def resolve_inputs(
    inputs: Sequence[str | Path], passed_over: list[tuple[Path, str]] | None = None
) -> list[tuple[Path, str]]:
    """Files to read as (path, source) in a deterministic order: arguments in the given order, each
    directory or glob sorted by relative path. `source` is the path relative to the argument (a file
    argument: its name), so document ids do not depend on where the corpus lives. A file reached twice is
    read once. Directories holding a model or an output are passed over, and appended to `passed_over`
    (directory, what it holds) for the reader to count. Raises InputError for a missing path, a
    directory/glob without files, or a directory given that holds a model or an output."""
    passed_over = [] if passed_over is None else passed_over
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    if not inputs:
        raise InputError("no input paths given")
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for arg in inputs:
        path = Path(arg)
        if storage.is_file(path):
            files = [(path, path.name)]
        elif storage.is_dir(path) and (kept := corpus_output(path)) is not None:
            files = kept
        elif storage.is_dir(path):
            before = len(passed_over)
            files = [(p, p.relative_to(path).as_posix()) for p in _walk(path, passed_over)]
            if not files:
                models = len(passed_over) - before
                why = f"; {models} holding a model or an output passed over" if models else ""
                raise InputError(f"{storage.url(path)}: directory has no input files (hidden files are "
                                 f"ignored{why})")
        elif glob.has_magic(str(arg)):
            base = _glob_base(str(arg))
            files = []
            parents: dict[Path, str | None] = {}  # a matched file's directory: what it holds if no corpus
            for match in storage.match(str(arg)):
                if storage.is_dir(match):
                    files += [(p, p.relative_to(base).as_posix()) for p in _walk(match, passed_over, False)]
                elif storage.is_file(match) and _wanted(match.name):
                    if match.parent not in parents:
                        parents[match.parent] = not_corpus(match.parent, *_listing(match.parent))
                        if parents[match.parent] is not None:
                            passed_over.append((match.parent, parents[match.parent]))
                    if parents[match.parent] is None:
                        files.append((match, match.relative_to(base).as_posix()))
            if not files:
                raise InputError(f"{arg}: no files match this pattern (outside models and outputs)")
        elif storage.scheme_of(path) is None and path.exists():
            raise InputError(f"{path}: not a regular file or directory")
        else:
            raise InputError(f"{storage.url(path)}: no such file or directory")
        for file, source in sorted(files, key=lambda item: item[1]):
            key = storage.resolve(file)
            if key not in seen:
                seen.add(key)
                found.append((file, source if isinstance(source, RecordedIds) else printable_source(source)))
    passed_over[:] = list(dict.fromkeys(passed_over))  # a directory reached twice is noted once
    return found


def input_files(inputs: Sequence[str | Path], output: str | Path | None = None) -> list[list[Any]]:
    """[path, source name, size, mtime_ns] of every file the readers would read from `inputs`, in reading
    order (the source name is what document ids are made of: the same files given as a directory or as a
    glob make other ids, so another output). The path is absolute, except for a file of another corpusprep
    output beside `output` (a pipeline's demo corpus, in the run dir that holds every stage's output): it is
    relative to their common parent, so a moved run dir still resumes and repairs. An object (`s3://...`) is
    its URL, and its row ends with the store's content tag (S3's ETag): a rewrite within the same second of
    the same size is seen too."""
    base = Path(output).resolve().parent if output is not None else None
    rows = []
    for path, source in resolve_inputs(inputs):
        st = storage.stat(path)
        if storage.scheme_of(path) is not None:
            rows.append([storage.url(path), source, st.st_size, st.st_mtime_ns, getattr(st, "tag", "")])
            continue
        where = path.resolve()
        if (base is not None and base in where.parents
                and is_artifact_dir(base / where.relative_to(base).parts[0])):
            where = where.relative_to(base)
        rows.append([str(where), source, st.st_size, st.st_mtime_ns])
    return rows

