"""Artifacts: every output directory (vocab, pairs, shards, a pipeline stage) follows one protocol.

An artifact is a directory whose manifest, `artifact.json`, is written last and atomically. It lists every
file the artifact owns (relative path, size, sha256), the identity the files were built from (the kind, the
format version, the resolved options and the fingerprint of the inputs) and the records of the tasks that
wrote them. While it is being built the directory holds `.work/run.json` (the identity) and one marker per
finished task instead.

One rule decides what a run does with its output directory (`Artifact.__enter__`):

- a manifest whose files are all there with their recorded sizes, same identity: complete, nothing to do;
- a manifest with missing or changed files, same identity: repair, rerunning only the tasks whose files
  are gone (and the intermediate tasks they need);
- an unfinished build (`.work/run.json`) of the same identity: resume from the task markers;
- a manifest or unfinished build of another identity: refuse with one line naming what changed (options,
  input files added, removed or modified); `--overwrite` rebuilds;
- another kind's manifest, or another kind of corpusprep output that is not an artifact (a pipeline run
  directory, a training run or a model checkpoint: `other_output`): refuse, even with `--overwrite`;
- files no corpusprep run wrote: refuse; `--overwrite` builds beside them and never deletes them;
- nothing: build.

`--overwrite` removes only what the artifact owns (its manifest's files, its work directory, and files
matching its kind's output patterns); a foreign file is left in place and mentioned. An output directory
that is, contains or lies inside one of the command's inputs is refused before anything is touched, and
`corpusprep/read` never reads a directory holding an artifact as corpus.

Input files are fingerprinted like make: (path, size, modification time), the path absolute or, for a file
of another output beside this one (a pipeline's demo corpus), relative, so that a moved run dir is the same
run. Hashing a many-GB corpus on every run would cost minutes; what this misses is an edit that keeps both
the size and the modification time (a file rewritten in place within the file system's timestamp
granularity, or an mtime set back on purpose). Artifacts read as inputs (a vocab, pairs) are fingerprinted
by their content digest, and their files are checked against the manifest's sha256 before they are used
(`require(..., checksums=)`, `verify_file`): an input damaged after it was written is refused, never used
silently.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from corpusprep.engine import faults, records
from corpusprep.engine.executor import Executor, load_marker, run_tasks
from corpusprep.engine.files import remove_stale_temps, write_json
from corpusprep.engine.lock import LOCK_NAME, exclusive_dir, shared_dir
from corpusprep.engine.records import inside
from corpusprep.errors import DataError, InputError, UsageError

MANIFEST = "artifact.json"
WORK = ".work"
FORMAT_VERSION = 1
# where an artifact's work files live, down to the deepest (a pairs build's .work/tokens/SPLIT/PART/FILE):
# the folders whose killed writes' temporaries a rerun removes, with those of the files the kind owns
WORK_FILES = tuple(f"{WORK}/" + "/".join(["*"] * depth) for depth in range(1, 6))


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(identity: Any) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def input_files(inputs: Sequence[str | Path], output: str | Path | None = None) -> list[list[Any]]:
    """[path, source name, size, mtime_ns] of every file the readers would read from `inputs`, in reading
    order (the source name is what document ids are made of: the same files given as a directory or as a
    glob make other ids, so another output). The path is absolute, except for a file of another corpusprep
    output beside `output` (a pipeline's demo corpus, in the run dir that holds every stage's output): it is
    relative to their common parent, so a moved run dir still resumes and repairs."""
    from corpusprep.read.inputs import resolve_inputs

    base = Path(output).resolve().parent if output is not None else None
    rows = []
    for path, source in resolve_inputs(inputs):
        st, where = path.stat(), path.resolve()
        if (base is not None and base in where.parents
                and is_artifact_dir(base / where.relative_to(base).parts[0])):
            where = where.relative_to(base)
        rows.append([str(where), source, st.st_size, st.st_mtime_ns])
    return rows


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
    directory: str | Path, manifest: dict | None = None, *, checksums: bool | Iterable[str] = False
) -> list[str]:
    """Owned files that are missing or changed (size; with `checksums`, content: of every file, or of the
    files named), one line each."""
    directory = Path(directory)
    try:
        manifest = manifest or load_manifest(directory)
        if manifest is None:
            return [f"{directory / MANIFEST}: missing (an unfinished or foreign directory)"]
        return [f"{path}: {why}" for path, why in _damaged(directory, manifest, checksums)]
    except DataError as error:
        return [str(error)]


def _damaged(directory: Path, manifest: dict, checksums: bool | Iterable[str]) -> list[tuple[Path, str]]:
    hashed = set(manifest["files"]) if checksums is True else set(checksums or ())
    found = []
    for name, entry in sorted(manifest["files"].items()):
        path = inside(directory, name)
        if not path.is_file():
            found.append((path, "missing"))
        elif path.stat().st_size != entry["size"]:
            found.append((path, f"{path.stat().st_size} bytes, manifest says {entry['size']}"))
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
        what = "missing" if not directory.exists() else f"not a finished corpusprep output (no {MANIFEST})"
        raise InputError(f"{directory}: {what}")
    if manifest["kind"] not in kinds:
        raise InputError(f"{directory}: holds {manifest['kind']}, not {' or '.join(kinds)}")
    found = problems(directory, manifest, checksums=checksums)
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


def check_not_nested(out_dir: str | Path, inputs: Iterable[str | Path], command: str) -> None:
    """Refuse an output directory that is, contains or lies inside one of the inputs."""
    out = Path(out_dir).resolve()
    for arg in inputs:
        src = _input_root(arg)
        if src is not None and (out == src or src in out.parents or out in src.parents):
            raise UsageError(
                f"{command}: the output {out_dir} and the input {arg} overlap; write the output outside the "
                "input (it would read its own output back, or delete its input)"
            )


def _input_root(arg: str | Path) -> Path | None:
    """The file or directory an input argument reads from (a glob: its directory part); None for a path
    that does not exist (the reader reports it). As in `corpusprep.read.inputs`, an existing path is taken
    literally before it is taken as a glob."""
    text = str(arg)
    if Path(text).exists():  # a path that exists is what the reader reads, `[`, `*` or `?` in it or not
        return Path(text).resolve()
    cut = min((text.find(c) for c in "*?[" if c in text), default=-1)
    if cut < 0:
        return None
    base = Path(text[:cut] or ".")
    return (base if base.is_dir() and text[cut - 1 : cut] in ("/", "") else base.parent).resolve()


def check_output_file(path: str | Path, inputs: Iterable[str | Path], command: str) -> None:
    """An output file (not a directory): never one of the inputs or inside an input directory (through
    symlinks too), and never inside another command's output directory."""
    target = Path(path).resolve()
    for arg in inputs:
        src = _input_root(arg)
        if src is not None and (target == src or src in target.parents):
            raise UsageError(f"{command}: the output {path} and the input {arg} overlap; write it elsewhere")
    check_not_inside(path, command, "write elsewhere")


def check_not_inside(
    path: str | Path, command: str | None, advice: str, *, pipeline_runs: bool = True,
    part_of: str | Path | None = None,
) -> None:
    """Refuse an output that lies inside another output (`enclosing_output`), one line ending in `advice`;
    `part_of`: the command's own output it may lie in (an import's checkpoint holds its vocab)."""
    found = enclosing_output(Path(path).resolve().parents, pipeline_runs=pipeline_runs)
    if found and (part_of is None or found[0] != Path(part_of).resolve()):
        prefix = f"{command}: " if command else ""
        raise UsageError(f"{prefix}{path} is inside {found[1]} ({found[0]}); {advice}")


PIPELINE_RUN_ENV = "CORPUSPREP_PIPELINE_RUN"  # the run dir of the pipeline running now (`pipeline_stages`)


@contextlib.contextmanager
def pipeline_stages(run_dir: str | Path) -> Iterator[None]:
    """While `corpusprep run` runs its stages: their outputs lie inside its run directory, which is then no
    other output to them (`enclosing_output`). An environment variable, so the trainer processes that
    torchrun starts for a train stage know it too; any other command run by hand still refuses it."""
    before = os.environ.get(PIPELINE_RUN_ENV)
    os.environ[PIPELINE_RUN_ENV] = str(Path(run_dir).resolve())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PIPELINE_RUN_ENV, None)
        else:
            os.environ[PIPELINE_RUN_ENV] = before


def in_running_pipeline(path: str | Path) -> bool:
    """Does `path` lie inside the run directory of the pipeline running now (`pipeline_stages`)?"""
    own = os.environ.get(PIPELINE_RUN_ENV)
    return bool(own) and Path(own) in Path(path).resolve().parents


def enclosing_output(directories: Iterable[Path], *, pipeline_runs: bool = True) -> tuple[Path, str] | None:
    """The first of `directories` that holds a corpusprep output (an artifact, finished or not, a pipeline
    run, a training run, a model checkpoint) and what it is; None where none does. Every output checks the
    directories above it with this (an artifact, a pipeline or training run dir, an export, a single output
    file), by `other_output`'s strict signs: a home directory with a `checkpoints/` folder of its own is no
    training run. The pipeline running now (`pipeline_stages`) is passed over: its stages live inside it;
    `pipeline_runs=False` passes over every pipeline run (the trainer: its run dir may be a pipeline's train
    stage, launched by hand with torchrun from the config the pipeline wrote)."""
    own = os.environ.get(PIPELINE_RUN_ENV)
    for directory in directories:
        found = other_output(directory, strict=True)
        if found and found[0] == "pipeline" and (
            not pipeline_runs or (own and Path(directory).resolve() == Path(own))
        ):
            continue
        if is_artifact_dir(directory, lock=False):  # a refused command leaves a lock in any folder
            manifest = read_manifest(directory)
            return directory, f"corpusprep {manifest['kind']}" if manifest else "a corpusprep output"
        if found:
            return directory, found[1]
    return None


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


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) for p in patterns)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _note(message: str) -> None:
    print(message, file=sys.stderr)


class Artifact:
    """Build an artifact under the one rule (module docstring): `with Artifact(...) as art:` then, unless
    `art.complete` holds the finished manifest, run tasks with `art.run(...)` and finish with `art.commit()`.

    `kind` names what is built ("pairs", "shards", ...); `identity` is everything the bytes depend on
    (options, input fingerprints, format versions); `owns` are glob patterns (relative paths) of the files
    this kind writes, used to clear an unfinished build of other settings; `inputs` are the command's input
    paths, for the overlap check. An artifact is never made inside another output (`enclosing_output`), but
    for the stages of the pipeline running now inside its run directory and the directory named by
    `part_of` (the command's own output the artifact is part of: an import's checkpoint holds its vocab).
    """

    def __init__(
        self,
        directory: str | Path,
        kind: str,
        identity: dict,
        *,
        owns: Sequence[str] = (),
        inputs: Iterable[str | Path] = (),
        overwrite: bool = False,
        command: str | None = None,
        quiet: bool = False,
        adopt: bool = False,
        part_of: str | Path | None = None,
        checksums: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.kind = kind
        self.identity = {"kind": kind, "format_version": FORMAT_VERSION, **identity}
        self.fingerprint = fingerprint(self.identity)
        self.owns = tuple(owns)
        self.overwrite = overwrite
        self.command = command or kind
        self.quiet = quiet
        self.adopt = adopt  # files matching `owns` in a directory without a manifest are this kind's own work
        # a rerun compares the files' sha256 too, not only their sizes (for small outputs: a vocab)
        self.checksums = checksums
        self.complete: dict | None = None
        self.state = "fresh"
        self.foreign: set[str] = set()
        self._records: dict[str, dict] = {}
        if self.directory.exists() and not self.directory.is_dir():
            raise UsageError(f"{self.directory}: exists and is not a directory; pick another output")
        self.inputs = [Path(p) for p in inputs]
        check_not_nested(self.directory, self.inputs, self.command)
        check_not_inside(self.directory, self.command, "pick another output directory", part_of=part_of)
        self._locks = contextlib.ExitStack()

    @property
    def work(self) -> Path:
        return self.directory / WORK

    # -- deciding --------------------------------------------------------------------------------------

    def __enter__(self) -> Artifact:
        """Take the writer's lock on the directory and a reader's lock on every input that is another
        corpusprep output (engine.lock: a writer replacing it fails at start while this run reads it), then
        decide what to do under the one rule."""
        try:
            self._locks.enter_context(exclusive_dir(self.directory))
            for source in self.inputs:
                if source.is_dir() and is_artifact_dir(source, lock=False):
                    self._locks.enter_context(shared_dir(source))
            self._decide()
        except BaseException:
            self._locks.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            markers = self.work / "markers"
            if exc[0] is not None and self.state == "fresh" and not any(markers.glob("*.done.json")):
                _remove(self.work)  # failed before any task finished: nothing to resume, leave no claim
        finally:
            self._locks.__exit__(*exc)

    def _decide(self) -> None:
        damaged = ""  # why the manifest or the build record cannot be used (one line naming the field)
        try:
            manifest = load_manifest(self.directory)
        except DataError as error:
            manifest, damaged = None, str(error)
        try:
            run = self._read_run()
        except DataError as error:
            # the build's record of the files that were there before it is lost: from now on every file
            # present counts as one (never deleted, never written over)
            run, damaged = {"foreign": sorted(self._files())}, damaged or str(error)
        if damaged:
            run = run or {}  # the directory is ours, its identity unknown
        if manifest is not None and manifest["kind"] != self.kind:
            raise UsageError(
                f"{self.directory}: holds {manifest['kind']}, not {self.kind}; pick another output directory"
            )
        other = other_output(self.directory)
        if other is not None and other[0] != self.kind:  # another kind's output, manifest or not
            raise UsageError(
                f"{self.directory}: holds {other[1]}, not {self.kind}; pick another output directory"
            )
        if manifest is not None and manifest["fingerprint"] == self.fingerprint:
            damaged = _damaged(self.directory, manifest, self.checksums)
            if not damaged:
                _remove(self.work)  # a kill between the manifest and this cleanup
                self.complete, self.state = manifest, "complete"
                return
            path, why = damaged[0]
            self._note(f"{len(damaged)} file(s) missing or changed ({path}: {why}): rebuilding them")
            for path, why in damaged:  # edited in place: ours, rebuilt like a lost file
                if why == CHANGED:
                    inside(self.directory, path.relative_to(self.directory).as_posix(), write=True).unlink()
            self._restore(manifest)
            self.state = "repair"
            return
        previous = manifest["identity"] if manifest is not None else (run or {}).get("identity")
        if manifest is not None or run is not None:
            if run is not None and manifest is None and run.get("fingerprint") == self.fingerprint:
                self.state = "resume"
                self.foreign = set(run.get("foreign", []))
                self._records = self._read_markers()
                return
            if not self.overwrite and damaged:
                raise UsageError(
                    f"{damaged} (damaged: not a record corpusprep wrote); pass --overwrite to rebuild the "
                    "directory, or pick another one"
                )
            if not self.overwrite:
                changes = describe_changes(previous or {}, self.identity) or ["unknown"]
                unfinished = "" if manifest is not None else "an unfinished "
                raise UsageError(
                    f"{self.directory}: holds {unfinished}{self.kind} built from other inputs or options "
                    f"({'; '.join(changes[:3])}); pass --overwrite to rebuild it, or pick another directory"
                )
            self._clear(manifest, unfinished=manifest is None, foreign=set((run or {}).get("foreign", [])))
            self.foreign = self._files()
        else:
            entries = sorted(p.name for p in self.directory.iterdir() if p.name not in (LOCK_NAME, WORK))
            visible = [e for e in entries if not e.startswith(".") and not self._adopted(e)]
            self.foreign = {name for name in self._files() if not self._adopted(name.split("/")[0])}
            clash = sorted(name for name in self.foreign if _matches(name, self.owns))
            if clash:  # refuse now, before any work, rather than when the task that would replace it runs
                raise UsageError(
                    f"{self.directory / clash[0]}: named like {self.kind} output, but no corpusprep manifest "
                    "owns it; move it away (or delete the directory) first"
                )
            if visible and not self.overwrite:
                raise UsageError(
                    f"{self.directory}: holds files no corpusprep run wrote ({', '.join(visible[:3])}); pick "
                    "another directory, or pass --overwrite to write beside them (they are never deleted)"
                )
            if visible:
                self._note_foreign(visible)
            _remove(self.work)
        self._remove_stale_temps()
        self._write_run()
        self.state = "fresh"

    def _files(self) -> set[str]:
        """Every file in the directory (relative paths), apart from the lock and the work directory."""
        return {
            name
            for p in self.directory.rglob("*")
            if p.is_file() and p.name != LOCK_NAME
            and not (name := p.relative_to(self.directory).as_posix()).startswith(WORK + "/")
        }

    def _write_run(self) -> None:
        """The build's record: its identity, and the files that were there before it (never written over,
        never removed, also when the build is resumed after a kill)."""
        run = {"fingerprint": self.fingerprint, "identity": self.identity, "foreign": sorted(self.foreign)}
        write_json(self.work / "run.json", run)

    def _adopted(self, name: str) -> bool:
        return self.adopt and any(fnmatch.fnmatch(name, p.split("/")[0]) for p in self.owns)

    def _read_run(self) -> dict | None:
        return records.load_record(self.work / "run.json", "artifact_run", missing_ok=True)

    def _remove_stale_temps(self) -> None:
        """Temporaries of killed writes: of the files this kind owns, its manifest and its work files only."""
        remove_stale_temps(self.directory, [*self.owns, MANIFEST, *WORK_FILES])

    def _read_markers(self, *, damaged_ok: bool = False) -> dict[str, dict]:
        """The finished tasks' records; a damaged one is one line naming it (skipped with `damaged_ok`)."""
        self._remove_stale_temps()
        found = {}
        for path in sorted((self.work / "markers").glob("*.done.json")):
            try:
                record = load_marker(path)
            except DataError:
                if not damaged_ok:
                    raise
                record = None
            if record is not None:
                found[path.name[: -len(".done.json")]] = record
        return found

    def _restore(self, manifest: dict) -> None:
        """Turn a finished but damaged artifact back into an unfinished build whose intact tasks are done."""
        _remove(self.work)
        self._remove_stale_temps()
        self.foreign = self._files() - set(manifest["files"]) - {MANIFEST}
        self._write_run()
        (self.directory / MANIFEST).unlink()  # consumers now see an unfinished directory
        self._records = dict(manifest.get("tasks", {}))

    def _clear(self, manifest: dict | None, unfinished: bool, foreign: set[str]) -> None:
        """Remove what this artifact owns, and nothing else: the manifest's files and the task outputs of
        its markers; for an unfinished build of ours, also files named like this kind's outputs (written by
        a task killed before its marker) unless they were there before the build."""
        owned = set(manifest["files"]) if manifest else set()
        for record in self._read_markers(damaged_ok=True).values():  # a damaged one owns nothing
            owned |= set(record["outputs"])
        for name in owned:  # a link on the way to a file it owns: refused before anything is deleted
            inside(self.directory, name, write=True)
        for path in sorted(self.directory.rglob("*"), reverse=True):  # rglob descends into no linked folder
            name = path.relative_to(self.directory).as_posix()
            ours = name in owned or (unfinished and _matches(name, self.owns) and name not in foreign)
            if ours and (path.is_file() or path.is_symlink()):
                inside(self.directory, name, write=True).unlink()  # a link: refused, named
        for path in sorted(self.directory.rglob("*"), reverse=True):  # directories emptied above
            if path.is_dir() and path.name != WORK and not any(path.iterdir()):
                path.rmdir()
        _remove(self.work)
        (self.directory / MANIFEST).unlink(missing_ok=True)
        left = sorted(p.name for p in self.directory.iterdir() if p.name not in (LOCK_NAME, WORK))
        if left:
            self._note_foreign(left)

    def _note_foreign(self, names: list[str]) -> None:
        self._note(f"{self.directory}: left in place, not written by corpusprep: {', '.join(names[:5])}")

    def _note(self, message: str) -> None:
        if not self.quiet:
            _note(message)

    # -- building --------------------------------------------------------------------------------------

    def run(self, fn: Callable, tasks: Sequence, executor: Executor | None = None,
            **options: Any) -> list[dict]:  # fmt: skip
        """Run the tasks not yet done on `executor` (default: the local pool; `Executor.run`'s `options`)
        with markers in the work directory."""
        names = [name for task in tasks for name in task.outputs]
        self.claim(names)
        for name in names:  # a linked folder or file in the way would send a write elsewhere
            inside(self.directory, name, write=True)
        return run_tasks(fn, tasks, executor=executor, marker_dir=self.work / "markers", root=self.directory,
                         known=self._records, **options)  # stats_kind among them: what `fn` returns

    def outputs(self) -> dict[str, dict]:
        """Size and sha256 of every task output recorded so far (hashed once, when its marker was written)."""
        records = {**self._records, **self._read_markers()}
        return {name: entry for r in records.values() for name, entry in r.get("outputs", {}).items()}

    def claim(self, names: Iterable[str]) -> None:
        """Refuse to write over a file that was there before and that corpusprep did not write."""
        clash = sorted(set(names) & self.foreign)
        if clash:
            raise UsageError(f"{self.directory / clash[0]}: not written by corpusprep; move it away first")

    def commit(self, files: Iterable[str] = (), record: dict | None = None) -> dict:
        """Write the manifest (last, atomically) owning every task output and `files`; drop the work dir."""
        records = {**self._records, **self._read_markers()}
        owned: dict[str, dict] = {}
        for task_record in records.values():
            for name, entry in task_record.get("outputs", {}).items():
                if not name.startswith(WORK + "/"):
                    owned[name] = entry
        for name in files:
            path = self.directory / name
            owned[name] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
        final = {k: v for k, v in records.items() if any(not n.startswith(WORK + "/") for n in v["outputs"])}
        manifest = {
            "kind": self.kind,
            "format_version": FORMAT_VERSION,
            "fingerprint": self.fingerprint,
            "identity": self.identity,
            "files": dict(sorted(owned.items())),
            "tasks": final,
            **(record or {}),
        }
        write_json(self.directory / MANIFEST, manifest)
        faults.reached("artifact_committed")
        _remove(self.work)
        self.complete = manifest
        return manifest


# What marks the corpusprep outputs that are not artifacts (their writers are `pipelines/runner.py` and
# `trainer/`): another kind's, so never written into by a command, not even with --overwrite.
PIPELINE_RUN_FILES = ("pipeline.json", "stages")  # beside run.json, written before the first stage
TRAINER_RUN_FILES = ("checkpoints", "metrics.jsonl")  # trainer/checkpoint.py, trainer/train.py
# a checkpoint directory (trainer.checkpoint.save, trainer.import_hf); model.pt: one of before the format
# without pickle, which is still another command's output (never written into)
CHECKPOINT_FILES = (records.CHECKPOINT_WEIGHTS, records.PICKLED_CHECKPOINT[0])
HF_MODEL_FILES = ("config.json", "model.safetensors")  # a Hugging Face model directory (trainer.export's)


def other_output(directory: str | Path, *, strict: bool = False) -> tuple[str, str] | None:
    """(artifact kind, description) of a corpusprep output that is not an artifact: a pipeline run directory
    ("pipeline"), a training run or a model checkpoint ("train", the kind of a pipeline's training stage,
    which resumes a run launched by hand), a Hugging Face model ("export"); None for anything else. `strict`
    (for the directories above an output, `enclosing_output`): only signs no user folder has by chance (a
    checkpoint's weights inside checkpoints/step-*, a pipeline's record beside stages/), not a folder merely
    named `checkpoints`."""
    d = Path(directory)
    if strict:
        pipeline = (d / "stages").is_dir() and any((d / n).is_file() for n in ("pipeline.json", "run.json"))
        run = any(any((d / "checkpoints").glob(f"step-*/{name}")) for name in CHECKPOINT_FILES)
        checkpoint = (d / "config.json").is_file() and any((d / n).is_file() for n in CHECKPOINT_FILES)
    else:
        pipeline = any((d / name).exists() for name in PIPELINE_RUN_FILES)
        run = any((d / name).exists() for name in TRAINER_RUN_FILES)
        checkpoint = any((d / name).exists() for name in CHECKPOINT_FILES)
    if pipeline:
        return "pipeline", "a pipeline run"
    if run:
        return "train", "a training run"
    if checkpoint:
        return "train", "a model checkpoint"
    if all((d / name).is_file() for name in HF_MODEL_FILES):  # trainer.export's, or any save_pretrained BERT
        return "export", "a Hugging Face model"
    return None


def held_output(directory: str | Path) -> tuple[str, str] | None:
    """(kind, description) of the corpusprep output `directory` holds: an artifact, finished or not (its
    kind from the manifest or from `.work/run.json`; "damaged" when the record is), else `other_output`'s
    signs; None for none."""
    d = Path(directory)
    for path, record_kind, prefix in ((d / MANIFEST, "artifact", ""),
                                      (d / WORK / "run.json", "artifact_run", "an unfinished ")):  # fmt: skip
        try:
            record = records.load_record(path, record_kind, missing_ok=True)
        except (DataError, OSError):
            return "damaged", f"a corpusprep output whose {path.relative_to(d)} is damaged"
        if record is not None:
            kind = str(record["kind"] if record_kind == "artifact" else record["identity"].get("kind"))
            return kind, f"{prefix}corpusprep {kind}"
    return other_output(d)


def owned_files(directory: str | Path) -> list[str]:
    manifest = read_manifest(directory)
    return sorted(manifest["files"]) if manifest else []


def is_artifact_dir(path: str | Path, *, lock: bool = True) -> bool:
    """A directory holding a corpusprep output, finished or not: never read as corpus. `lock=False`: a lock
    alone is no sign (a refused command leaves one wherever it was pointed)."""
    path = Path(path)
    built = (path / MANIFEST).is_file() or (path / WORK / "run.json").is_file()
    return built or (lock and (path / LOCK_NAME).exists())


__all__ = [
    "MANIFEST",
    "WORK",
    "Artifact",
    "check_not_inside",
    "check_not_nested",
    "content_digest",
    "describe_changes",
    "enclosing_output",
    "fingerprint",
    "held_output",
    "in_running_pipeline",
    "input_files",
    "is_artifact_dir",
    "load_manifest",
    "other_output",
    "owned_files",
    "pipeline_stages",
    "problems",
    "read_manifest",
    "require",
    "sha256_file",
    "verify_file",
]
