"""Command-line options shared by every command that reads user text, so they read the same everywhere, and
the decorators that give a command its groups of options, each declared once:

    @app.command("build-pairs")
    @with_options(PairOptions)   # options: PairOptions -> a flag per field declared with corpusprep.flags
    @with_context()              # context: RunContext -> --workers ... --ray-address, --overwrite, --progress
    @with_read_options           # read_options: ReadOptions -> --input-format ... --document-per-file
    def build_pairs_command(inputs, vocab, output, *, options, context, read_options): ...

Each replaces one parameter of the command by its options (in place, in order: the help lists them there)
and calls the command with the object they describe, checked once by that object's own rules.
"""

from __future__ import annotations

import functools
import inspect
import os
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from corpusprep.engine import storage
from corpusprep.engine.executor import DEFAULT_ENGINE, Executor, ExecutorOptions
from corpusprep.engine.stage import RunContext
from corpusprep.errors import UsageError
from corpusprep.flags import FIELD_DEFAULT, Flag, flags
from corpusprep.read import FORMATS, ON_ERROR, ReadOptions
from corpusprep.read.document import FORMATS_HELP

Inputs = Annotated[
    list[str],
    typer.Argument(help="Input files, directories (read recursively) or glob patterns.", show_default=False),
]
Format = Annotated[
    str,
    typer.Option(
        "--input-format",
        help=f"Input format: {FORMATS_HELP}.",
    ),
]
OneSentencePerLine = Annotated[
    bool,
    typer.Option(
        "--one-sentence-per-line",
        help="Input is Google's BERT format: one sentence per line, a blank line between documents "
        "(same as --input-format bert).",
    ),
]
TextField = Annotated[str, typer.Option(help="JSONL key or Parquet column holding the document text.")]
OnError = Annotated[
    str,
    typer.Option(
        help="Bad input policy. auto: skip bad documents (not-JSON line, missing/null text) and count them, "
        "fail on unreadable files (permission denied, truncated .gz/.xz, Parquet without the text column); "
        "skip: skip and count both; fail: fail on both, naming the file and position.",
    ),
]
MaxDocumentMB = Annotated[
    float,
    typer.Option(
        "--max-document-mb",
        help="Documents longer than this (MB of UTF-8) are cut into parts at line boundaries, counted in the "
        "stats (documents_cut), so memory stays bounded whatever the input's shape (one huge line, a "
        "file of lines without a blank one); a JSONL line longer than this is skipped and counted.",
    ),
]
DocumentPerFile = Annotated[
    bool,
    typer.Option(
        "--document-per-file",
        help="Plain text (text, bert, and files auto-detected as text): each file is one document, its "
        "blank-line-separated paragraphs kept apart, instead of a document per paragraph.",
    ),
]
VocabDir = Annotated[
    Path,
    typer.Option("--vocab", help="Vocab directory written by `corpusprep vocab` (holds tokenizer.json)."),
]
Workers = Annotated[
    int, typer.Option(help="Worker processes (0: one per available core).", min=0)
]
Overwrite = Annotated[
    bool,
    typer.Option(
        help="Rebuild an output made from other inputs or options instead of refusing; removes only the "
        "files the output owns, never foreign ones."
    ),
]
Engine = Annotated[
    str,
    typer.Option(help="Where tasks run: local (a process pool) or ray (a Ray cluster); same output."),
]
RayAddress = Annotated[
    str | None,
    typer.Option(help="Ray cluster to join with --engine ray ('auto': this node's); none: a local one."),
]
# The engine settings (ExecutorOptions' fields) as options, in this order (`with_executor` adds them)
ENGINE_OPTIONS = {"workers": (Workers, 0), "engine": (Engine, DEFAULT_ENGINE),
                  "ray_address": (RayAddress, None)}
Progress = Annotated[bool, typer.Option(help="Show progress bars on stderr.")]


def read_options(
    input_format: str = ReadOptions.format,
    one_sentence_per_line: bool = False,
    text_field: str = ReadOptions.text_field,
    on_error: str = ReadOptions.on_error,
    max_document_mb: float = ReadOptions.max_document_mb,
    document_per_file: bool = ReadOptions.document_per_file,
) -> ReadOptions:
    """ReadOptions from the shared options, validated the same way for every command (UsageError, exit 2)
    and as a pipeline's [input] is (ReadOptions checks both), with the flags' names in the messages."""
    input_format, on_error = input_format.lower(), on_error.lower()
    if input_format not in FORMATS:
        raise UsageError(f"--input-format {input_format!r}: choose from {', '.join(FORMATS)}")
    if on_error not in ON_ERROR:
        raise UsageError(f"--on-error {on_error!r}: choose from {', '.join(ON_ERROR)}")
    if one_sentence_per_line:
        if input_format not in ("auto", "bert"):
            raise UsageError(f"--one-sentence-per-line conflicts with --input-format {input_format}")
        input_format = "bert"
    if not text_field.strip():
        raise UsageError("--text-field must not be empty")
    try:
        return ReadOptions(format=input_format, text_field=text_field, on_error=on_error,
                           max_document_mb=max_document_mb, document_per_file=document_per_file)
    except UsageError as error:  # "max_document_mb=0: ..." -> "--max-document-mb 0: ..."
        message = str(error).replace("max_document_mb=", "--max-document-mb ")
        raise UsageError(message.replace("document_per_file", "--document-per-file")) from None


def output_files(
    outputs: dict[str, str | None], inputs: Sequence[str | Path], command: str
) -> dict[str, Path]:
    """Every output file of a command ({option: path as typed}), checked together before any work: not a
    directory (nor a name ending in "/"), not under a file, not one of the inputs or inside one (through
    symlinks too: `check_output_file`, the rule every command follows), and no two options naming one file.
    Where the directory exists, a probe file (the name the atomic write uses) is created and removed, so a
    read-only or forbidden location fails now, in one line, not after the work."""
    from corpusprep.engine.files import temp_name
    from corpusprep.engine.placement import check_output_file

    checked: dict[str, Path] = {}
    for option, raw in outputs.items():
        if raw is None:
            continue
        path = Path(raw)
        if storage.is_dir(path) or raw.endswith(("/", os.sep)):
            what = "is a directory" if storage.is_dir(path) else "ends in a slash, as a directory's name does"
            raise UsageError(f"{option} {raw}: {what}; {option} takes a file name")
        # the folders above it (a URL's: its bucket's prefixes, never pathlib's `s3:` and `.` above them)
        above = [p for p in path.parents if storage.scheme_of(p) or not storage.scheme_of(path)]
        parent = next((p for p in above if storage.exists(p)), None)
        if parent is not None and not storage.is_dir(parent):
            raise UsageError(f"{storage.url(parent)}: is a file, not a directory (needed for {option} {raw})")
        check_output_file(path, inputs, command)
        for other, seen in checked.items():
            if storage.resolve(seen) == storage.resolve(path):
                raise UsageError(f"{command}: {other} and {option} name the same file {raw}; give two names")
        if storage.is_dir(path.parent):
            probe = temp_name(path)
            storage.open_file(probe, "wb").close()  # an OSError (read-only, permission): one line naming it
            storage.remove(probe)
        checked[option] = path
    return checked


# The read settings (ReadOptions' fields, and --one-sentence-per-line) as options, in this order
# (`with_read_options` adds them)
READ_OPTIONS = {
    "input_format": (Format, ReadOptions.format),
    "one_sentence_per_line": (OneSentencePerLine, False),
    "text_field": (TextField, ReadOptions.text_field),
    "on_error": (OnError, ReadOptions.on_error),
    "max_document_mb": (MaxDocumentMB, ReadOptions.max_document_mb),
    "document_per_file": (DocumentPerFile, ReadOptions.document_per_file),
}


def with_executor(command: Callable) -> Callable:
    """A typer command that takes `executor` gets the engine options (ENGINE_OPTIONS) in its place instead,
    and is called with the executor they describe, checked once (`ExecutorOptions`: one line, exit 2)."""
    return _expanded(command, "executor", _table(ENGINE_OPTIONS), _executor)


def with_context(*, parallel: bool = True, overwrite: Any = Overwrite) -> Callable[[Callable], Callable]:
    """A typer command that takes `context` gets the options of a `RunContext` in its place instead: the
    engine options (`parallel=False`: a command that runs in its own process), --overwrite (its help:
    `overwrite`) and --progress; it is called with the `RunContext` they describe."""
    table = {**(ENGINE_OPTIONS if parallel else {}), "overwrite": (overwrite, RunContext.overwrite),
             "progress": (Progress, RunContext.progress)}

    def build(**given: Any) -> RunContext:
        settings = {key: given.pop(key) for key in ENGINE_OPTIONS if key in given}
        return RunContext(_executor(**settings), **given) if parallel else RunContext(**given)

    return lambda command: _expanded(command, "context", _table(table), build)


def with_read_options(command: Callable) -> Callable:
    """A typer command that takes `read_options` gets the read options (READ_OPTIONS) in its place instead,
    and is called with the `ReadOptions` they describe, checked once (`read_options`: one line, exit 2)."""
    return _expanded(command, "read_options", _table(READ_OPTIONS), read_options)


def with_options(options: type, name: str = "options") -> Callable[[Callable], Callable]:
    """A typer command that takes `name` (an options dataclass whose fields are declared with
    `corpusprep.flags.flag`) gets a typer option per flag in its place instead, in field order, and is
    called with `options(**the values)`: each option written once, in its dataclass (a field that is no
    flag keeps its default)."""
    declared = flags(options)
    hints = typing.get_type_hints(options)
    params = [_parameter(field.name, flag, hints[field.name], field.default) for field, flag in declared]

    def build(**given: Any) -> Any:
        return options(**{field.name: flag.parse(given[field.name]) if flag.parse else given[field.name]
                          for field, flag in declared})

    return lambda command: _expanded(command, name, params, build)


def _parameter(name: str, flag: Flag, hint: Any, default: Any) -> inspect.Parameter:
    """The typer parameter of a declared flag (`corpusprep.flags.Flag`)."""
    settings = {"metavar": flag.metavar} if flag.metavar else {}
    if not flag.show_default:
        settings["show_default"] = False
    kind = flag.cli_type if flag.cli_type is not None else hint
    annotation = Annotated[kind, typer.Option(*flag.decls, help=flag.help, **settings)]
    default = default if flag.cli_default is FIELD_DEFAULT else flag.cli_default
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _table(options: dict[str, tuple[Any, Any]]) -> list[inspect.Parameter]:
    """Parameters from a table {name: (annotation, default)}."""
    return [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
            for name, (kind, default) in options.items()]


def _executor(**settings: Any) -> Executor:
    return ExecutorOptions(**settings).build()


def _expanded(command: Callable, name: str, options: list[inspect.Parameter], build: Callable) -> Callable:
    """`command` with its parameter `name` replaced by `options`, and called with `build(**their values)`
    as `name`: one group of options declared once for every command."""
    signature = inspect.signature(command)
    hints = typing.get_type_hints(command, include_extras=True)  # typer reads the signature's, not strings
    taken = set(signature.parameters) - {name}
    if clash := taken & {option.name for option in options}:
        raise TypeError(f"{command.__name__}: {sorted(clash)} both a parameter and an option of {name}")
    params = []
    for param in signature.parameters.values():
        if param.name != name:
            params.append(param.replace(annotation=hints.get(param.name, param.annotation)))
            continue
        params += [option.replace(kind=param.kind) for option in options]

    @functools.wraps(command)
    def run(**arguments):
        settings = {option.name: arguments.pop(option.name) for option in options}
        return command(**arguments, **{name: build(**settings)})

    run.__signature__ = signature.replace(parameters=params)
    run.__annotations__ = {param.name: param.annotation for param in params}
    return run
