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
  directory, a training run or a model checkpoint: `engine.outputs`): refuse, even with `--overwrite`;
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
import enum
import fnmatch
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from corpusprep.engine import faults, records, storage
from corpusprep.engine.executor import Executor, load_marker, run_tasks
from corpusprep.engine.files import remove_stale_temps, write_json
from corpusprep.engine.lock import LOCK_NAME, check_held, exclusive_dir, shared_dir
from corpusprep.engine.manifest import (
    CHANGED,
    FORMAT_VERSION,
    MANIFEST,
    WORK,
    damaged,
    describe_changes,
    fingerprint,
    load_manifest,
    sha256_file,
)
from corpusprep.engine.outputs import OUTPUT_KINDS, OutputKind, is_artifact_dir, recognise
from corpusprep.engine.placement import (
    check_not_inside,
    check_not_nested,
)
from corpusprep.engine.records import inside
from corpusprep.errors import DataError, UsageError

# where an artifact's work files live, down to the deepest (a pairs build's .work/tokens/FILE, a curate
# build's .work/removed/FILE): the folders whose killed writes' temporaries a rerun removes, with those of
# the files the kind owns
WORK_FILES = tuple(f"{WORK}/" + "/".join(["*"] * depth) for depth in range(1, 6))


class State(enum.Enum):
    """What entering an artifact found (`Artifact._decide`)."""

    FRESH = "fresh"  # nothing of ours, or cleared: build every task
    COMPLETE = "complete"  # the manifest of the same identity, every file intact: nothing to do
    REPAIR = "repair"  # the same identity, files missing or changed: rerun the tasks that wrote them
    RESUME = "resume"  # an unfinished build of the same identity: rerun the tasks without a marker

def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) for p in patterns)


def _note(message: str) -> None:
    print(message, file=sys.stderr)


class Artifact:
    """Build an artifact under the one rule (module docstring): `with Artifact(...) as art:` then, unless
    `art.complete` holds the finished manifest, run tasks with `art.run(...)` and finish with `art.commit()`.

    `kind` names what is built, a row of `engine.outputs.OUTPUT_KINDS` ("pairs", "export", ...; or a row
    itself, for a test's toy kind or files written by hand), which supplies what the kind owns (`owns`,
    `adopt`, `checksums`: see OutputKind); `identity` is everything the bytes depend on (options, input
    fingerprints, format versions); `inputs` are the command's input paths, for the overlap check and the
    readers' locks. An artifact is never made inside another output (`enclosing_output`), but for the
    stages of the pipeline running now inside its run directory and the directory named by `part_of` (the
    command's own output the artifact is part of: an import's checkpoint holds its vocab).
    """

    def __init__(
        self,
        directory: str | Path,
        kind: str | OutputKind,
        identity: dict,
        *,
        inputs: Iterable[str | Path] = (),
        overwrite: bool = False,
        command: str | None = None,
        quiet: bool = False,
        part_of: str | Path | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.shown = storage.url(self.directory)  # in messages: a URL with its `//`, a local path as given
        self.row = OUTPUT_KINDS[kind] if isinstance(kind, str) else kind
        self.kind = self.row.kind
        self.identity = {"kind": self.kind, "format_version": FORMAT_VERSION, **identity}
        self.fingerprint = fingerprint(self.identity)
        self.owns = self.row.owns
        self.overwrite = overwrite
        self.command = command or self.kind
        self.quiet = quiet
        self.complete: dict | None = None
        self.state = State.FRESH
        self.foreign: set[str] = set()
        self._records: dict[str, dict] = {}
        if storage.exists(self.directory) and not storage.is_dir(self.directory):
            raise UsageError(f"{storage.url(self.directory)}: exists and is not a directory; pick another "
                             "output")
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
                if storage.is_dir(source) and is_artifact_dir(source, lock=False):
                    self._locks.enter_context(shared_dir(source))
            self._decide()
        except BaseException:
            self._locks.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            markers = self.work / "markers"
            if exc[0] is not None and self.state is State.FRESH and not storage.glob(markers, "*.done.json"):
                storage.remove_tree(self.work)  # failed before any task finished: nothing to resume, no claim
        finally:
            self._locks.__exit__(*exc)


    def _decide(self) -> None:
        manifest, run, why = self._read_records()
        self._refuse_other_kind(manifest, run)
        if manifest is not None and manifest["fingerprint"] == self.fingerprint:
            self._complete_or_repair(manifest)
            return
        if manifest is None and run is not None and run.get("fingerprint") == self.fingerprint:
            self._resume(run)
            return
        if manifest is not None or run is not None:
            self._refuse_or_clear(manifest, run, why)
        else:
            self._start_in_new_directory()
        self._remove_stale_temps()
        self._write_run()
        self.state = State.FRESH

    def _read_records(self) -> tuple[dict | None, dict | None, str]:
        """The manifest, the unfinished build's record, and why one of them cannot be used ("": both can;
        one line naming the field)."""
        why = ""
        try:
            manifest = load_manifest(self.directory)
        except DataError as error:
            manifest, why = None, str(error)
        try:
            run = self._read_run()
        except DataError as error:
            # the build's record of the files that were there before it is lost: from now on every file
            # present counts as one (never deleted, never written over)
            run, why = {"foreign": sorted(self._files())}, why or str(error)
        if why:
            run = run or {}  # the directory is ours, its identity unknown
        return manifest, run, why

    def _refuse_other_kind(self, manifest: dict | None, run: dict | None) -> None:
        if manifest is not None and manifest["kind"] != self.kind:
            raise UsageError(
                f"{self.shown}: holds {manifest['kind']}, not {self.kind}; pick another output directory"
            )
        other = recognise(self.directory)
        # a record of this kind, finished or not, may look like what the kind writes (an import: a checkpoint)
        ours = manifest is not None or (run or {}).get("identity", {}).get("kind") == self.kind
        own_look = ours and other is not None and other.name in self.row.looks_like
        if other is not None and other.kind != self.kind and not own_look:  # another kind's output
            raise UsageError(
                f"{self.shown}: holds {other.what}, not {self.kind}; pick another output directory"
            )

    def _complete_or_repair(self, manifest: dict) -> None:
        """The same identity: complete when every file is intact, else rebuild the missing or changed."""
        found = damaged(self.directory, manifest, self.row.checksums)
        if not found:
            storage.remove_tree(self.work)  # a kill between the manifest and this cleanup
            self._remove_stale_temps()  # a killed writer's, if one was still a zombie when its run ended
            self.complete, self.state = manifest, State.COMPLETE
            return
        path, why = found[0]
        self._note(f"{len(found)} file(s) missing or changed ({path}: {why}): rebuilding them")
        for path, why in found:  # edited in place: ours, rebuilt like a lost file
            if why == CHANGED:
                name = path.relative_to(self.directory).as_posix()
                storage.remove(inside(self.directory, name, write=True))
        self._restore(manifest)
        self.state = State.REPAIR

    def _resume(self, run: dict) -> None:
        self.state = State.RESUME
        self.foreign = set(run.get("foreign", []))
        self._records = self._read_markers()

    def _refuse_or_clear(self, manifest: dict | None, run: dict | None, why: str) -> None:
        """Another identity's output (or a damaged record of ours): refused, or cleared with --overwrite."""
        if not self.overwrite and why:
            raise UsageError(
                f"{why} (damaged: not a record corpusprep wrote); pass --overwrite to rebuild the "
                "directory, or pick another one"
            )
        if not self.overwrite:
            previous = manifest["identity"] if manifest is not None else (run or {}).get("identity")
            changes = describe_changes(previous or {}, self.identity) or ["unknown"]
            unfinished = "" if manifest is not None else "an unfinished "
            raise UsageError(
                f"{self.shown}: holds {unfinished}{self.kind} built from other inputs or options "
                f"({'; '.join(changes[:3])}); pass --overwrite to rebuild it, or pick another directory"
            )
        self._clear(manifest, unfinished=manifest is None, foreign=set((run or {}).get("foreign", [])))
        self.foreign = self._files()

    def _start_in_new_directory(self) -> None:
        """No record of ours: files already there are foreign (refused unless --overwrite; never deleted)."""
        entries = sorted(p.name for p in storage.list_dir(self.directory) if p.name not in (LOCK_NAME, WORK))
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
                f"{self.shown}: holds files no corpusprep run wrote ({', '.join(visible[:3])}); pick "
                "another directory, or pass --overwrite to write beside them (they are never deleted)"
            )
        if visible:
            self._note_foreign(visible)
        storage.remove_tree(self.work)

    def _files(self) -> set[str]:
        """Every file in the directory (relative paths), apart from the lock and the work directory."""
        return {
            name
            for p in storage.rglob(self.directory, "*")
            if p.name != LOCK_NAME and storage.is_file(p)
            and not (name := p.relative_to(self.directory).as_posix()).startswith(WORK + "/")
        }

    def _write_run(self) -> None:
        """The build's record: its identity, and the files that were there before it (never written over,
        never removed, also when the build is resumed after a kill)."""
        run = {"fingerprint": self.fingerprint, "identity": self.identity, "foreign": sorted(self.foreign)}
        write_json(self.work / "run.json", run)

    def _adopted(self, name: str) -> bool:
        return self.row.adopt and any(fnmatch.fnmatch(name, p.split("/")[0]) for p in self.owns)

    def _read_run(self) -> dict | None:
        return records.load_record(self.work / "run.json", "artifact_run", missing_ok=True)

    def _remove_stale_temps(self) -> None:
        """Temporaries of killed writes: of the files this kind owns, its manifest and its work files only."""
        remove_stale_temps(self.directory, [*self.owns, MANIFEST, *WORK_FILES])

    def _read_markers(self, *, damaged_ok: bool = False) -> dict[str, dict]:
        """The finished tasks' records; a damaged one is one line naming it (skipped with `damaged_ok`)."""
        self._remove_stale_temps()
        found = {}
        for path in storage.glob(self.work / "markers", "*.done.json"):
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
        storage.remove_tree(self.work)
        self._remove_stale_temps()
        self.foreign = self._files() - set(manifest["files"]) - {MANIFEST}
        self._write_run()
        storage.remove(self.directory / MANIFEST)  # consumers now see an unfinished directory
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
        for path in reversed(storage.rglob(self.directory, "*")):  # rglob descends into no linked folder
            name = path.relative_to(self.directory).as_posix()
            ours = name in owned or (unfinished and _matches(name, self.owns) and name not in foreign)
            if ours and (path.is_symlink() or storage.is_file(path)):
                storage.remove(inside(self.directory, name, write=True))  # a link: refused, named
        for path in reversed(storage.rglob(self.directory, "*")):  # directories emptied above
            if path.name != WORK and storage.is_dir(path) and not storage.list_dir(path):
                storage.rmdir(path)
        storage.remove_tree(self.work)
        storage.remove(self.directory / MANIFEST, missing_ok=True)
        left = sorted(p.name for p in storage.list_dir(self.directory) if p.name not in (LOCK_NAME, WORK))
        if left:
            self._note_foreign(left)

    def _note_foreign(self, names: list[str]) -> None:
        self._note(f"{self.shown}: left in place, not written by corpusprep: {', '.join(names[:5])}")

    def _note(self, message: str) -> None:
        if not self.quiet:
            _note(message)

    # -- building --------------------------------------------------------------------------------------

    def run(self, fn: Callable, tasks: Sequence, executor: Executor | None = None,
            **options: Any) -> list[dict]:
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
            owned[name] = {"size": storage.stat(path).st_size, "sha256": sha256_file(path)}
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
        check_held(self.directory)  # on a store: the lease still ours (engine.lock), else no manifest
        write_json(self.directory / MANIFEST, manifest)
        faults.reached("artifact_committed")
        storage.remove_tree(self.work)
        self.complete = manifest
        return manifest
