"""Manifests: what an artifact's `artifact.json` holds, how it is read and checked, and the one file hash.

A finished artifact's manifest lists every file it owns (relative path, size, sha256), the identity the files
were built from (kind, format version, resolved options, input fingerprints) and the records of the tasks
that wrote them. A consumer checks the files against it (`require`, `verify_file`) before it uses them; a
producer compares identities (`fingerprint`, `describe_changes`) to decide what a rerun does
(`engine.artifact`).

    kind            "vocab" | "pairs" | "shards" | "corpus" | "train" | "evaluate" | "export" | "import"
    format_version  1
    fingerprint     sha256 of the identity
    identity        {kind, format_version, options, inputs: {files: [[path, size, mtime_ns], ...]},
                     the content digest of an upstream artifact (vocab_sha256, pairs), ...}
    files           {relative path: {size, sha256}}: every file the artifact owns
    tasks           {task id: {stats, outputs: {path: {size, sha256}}}}: the records of the tasks that
                    wrote them
"""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from corpusprep.engine import records, storage
from corpusprep.engine.files import stale_temps
from corpusprep.engine.records import inside
from corpusprep.errors import DataError, InputError

MANIFEST = "artifact.json"
WORK = ".work"  # an unfinished build's directory: its identity (run.json) and task markers
RUN_RECORD = f"{WORK}/run.json"
FORMAT_VERSION = 1


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with storage.open_file(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(identity: Any) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def load_manifest(directory: str | Path) -> dict | None:
    """The manifest of a finished artifact (records.load_record, kind "artifact"), None when there is none;
    a damaged one (not JSON, a field of the wrong type, a name outside the directory) is one DataError line
    naming the file and the field."""
    return records.load_record(Path(directory) / MANIFEST, "artifact", missing_ok=True)


def read_manifest(directory: str | Path) -> dict | None:
    """The manifest of a finished artifact, or None when it is absent or damaged: for the checks that only
    ask whether a directory holds a corpusprep output (a consumer calls `require`, which names the damage)."""
    try:
        return load_manifest(directory)
    except (DataError, OSError):
        return None


def owned_files(directory: str | Path) -> list[str]:
    """The files a finished artifact's manifest lists (relative paths); none without one."""
    manifest = read_manifest(directory)
    return sorted(manifest["files"]) if manifest else []


def content_digest(directory: str | Path) -> str:
    """A finished artifact's content digest, for the fingerprint of a stage that reads it."""
    manifest = load_manifest(directory)
    if manifest is None:
        raise InputError(f"{directory}: not a finished corpusprep output ({MANIFEST} missing)")
    # The files the tasks wrote are the data; reports beside them (stats.json: run times) are not, so a
    # repaired artifact has the same digest as the original.
    data = {n for record in manifest.get("tasks", {}).values() for n in record.get("outputs", {})}
    files = {n: e["sha256"] for n, e in manifest["files"].items() if n in data or not data}
    return fingerprint(files)


def problems(
    directory: str | Path, manifest: dict | None = None, *, checksums: bool | Iterable[str] = False,
    leftovers: bool = True,
) -> list[str]:
    """Owned files that are missing or changed (size; with `checksums`, content: of every file, or of the
    files named), and (`leftovers`) temporary files of killed writes left beside them, one line each."""
    directory = Path(directory)
    try:
        manifest = manifest or load_manifest(directory)
        if manifest is None:
            return [f"{directory / MANIFEST}: missing (an unfinished or foreign directory)"]
        found = [f"{path}: {why}" for path, why in damaged(directory, manifest, checksums)]
        left = left_behind(directory, manifest) if leftovers else []
        return found + [f"{path}: {LEFTOVER}" for path in left]
    except DataError as error:
        return [str(error)]


LEFTOVER = "leftover temporary file of an interrupted write (a rerun of the command that wrote it removes it)"


def left_behind(directory: Path, manifest: dict) -> list[Path]:
    """Temporary names of killed writes of the files a finished artifact lists (and of its manifest): a
    rerun that finds the artifact complete removes them (engine.artifact)."""
    return stale_temps(directory, [*map(glob.escape, manifest["files"]), MANIFEST])


def damaged(directory: Path, manifest: dict, checksums: bool | Iterable[str]) -> list[tuple[Path, str]]:
    hashed = set(manifest["files"]) if checksums is True else set(checksums or ())
    found = []
    for name, entry in sorted(manifest["files"].items()):
        path = inside(directory, name)
        size = storage.stat(path).st_size if storage.is_file(path) else None
        if size is None:
            found.append((path, "missing"))
        elif size != entry["size"]:
            found.append((path, f"{size} bytes, manifest says {entry['size']}"))
        elif name in hashed and sha256_file(path) != entry["sha256"]:
            found.append((path, CHANGED))
    return found


CHANGED = "content differs from the manifest (sha256)"


def _repair_hint(problem: str, directory: Path) -> str:
    # A file changed in place keeps its size, and the producer's rerun checks only sizes (hashing a big
    # output on every run would cost minutes): a deleted file is what makes it rebuild.
    if problem.endswith(CHANGED):
        return f"delete it and rerun the command that wrote {directory} to rebuild it"
    return f"rerun the command that wrote {directory} to repair it"


def require(
    directory: str | Path, kind: str | Sequence[str], *, checksums: bool | Iterable[str] = False
) -> dict:
    """The manifest of a complete artifact of `kind`, for a consumer; else one line naming what is wrong.
    `checksums`: also compare the content of every file (True) or of the files named with the manifest."""
    directory = Path(directory)
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    manifest = load_manifest(directory)
    if manifest is None:
        found = storage.exists(directory)
        what = f"not a finished corpusprep output (no {MANIFEST})" if found else "missing"
        raise InputError(f"{directory}: {what}")
    if manifest["kind"] not in kinds:
        raise InputError(f"{directory}: holds {manifest['kind']}, not {' or '.join(kinds)}")
    found = problems(directory, manifest, checksums=checksums, leftovers=False)  # harmless to a reader
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise DataError(f"{found[0]}{more}; {_repair_hint(found[0], directory)}")
    return manifest


def verify_file(path: str | Path, sha256: str, directory: str | Path) -> None:
    """One file of the artifact `directory` against its manifest's sha256 (a consumer, before reading it:
    the file is then in the page cache for the read that follows)."""
    if sha256_file(path) != sha256:
        problem = f"{path}: {CHANGED}"
        raise DataError(f"{problem}; {_repair_hint(problem, Path(directory))}")


def describe_changes(old: dict, new: dict, prefix: str = "") -> list[str]:
    """What differs between two identities, as short phrases ("options.dupe_factor: 5 -> 3")."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [] if old == new else [f"{prefix or 'identity'}: {_short(old)} -> {_short(new)}"]
    changes = []
    for key in sorted(set(old) | set(new)):
        name = f"{prefix}{key}"
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key == "files" and _file_rows(a) and _file_rows(b):
            changes += _file_changes(a, b)
        elif isinstance(a, dict) and isinstance(b, dict):
            changes += describe_changes(a, b, f"{name}.")
        else:
            changes.append(f"{name}: {_short(a)} -> {_short(b)}")
    return changes


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _file_rows(value: Any) -> bool:
    """An identity's `files`: [path, ...] rows (a damaged record's may be anything)."""
    return isinstance(value, list) and all(isinstance(r, list) and r and isinstance(r[0], str) for r in value)


def _file_changes(old: list, new: list) -> list[str]:
    before, after = {row[0]: row[1:] for row in old}, {row[0]: row[1:] for row in new}
    out = [f"input {p}: added" for p in after if p not in before]
    out += [f"input {p}: removed" for p in before if p not in after]
    for p in after:
        if p in before and after[p] != before[p]:
            renamed = len(after[p]) == len(before[p]) == 3 and after[p][1:] == before[p][1:]
            out.append(f"input {p}: read as {after[p][0]!r}, was {before[p][0]!r}" if renamed
                       else f"input {p}: modified")
    if not out and [r[0] for r in old] != [r[0] for r in new]:
        out.append("inputs: the same files in another order")
    return out


