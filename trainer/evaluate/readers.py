"""A task's labelled files -> TaskData: each file read by the reader of its format (READERS: one entry per
format of `data.FORMATS`), the task kind chosen (`--task`, or the one `auto` picks) and the scored splits
checked against the training data by that kind's rules."""

from __future__ import annotations

from pathlib import Path

from corpusprep.engine import storage
from corpusprep.errors import DataError, InputError, UsageError
from trainer.evaluate import columns, conllu, squad, tables
from trainer.evaluate.data import Faults, Row, Split, TaskData, file_format, suffix_of
from trainer.evaluate.tasks import choose_kind, scores, task_kind


def read_squad(path: Path, fmt: str, settings) -> Split:
    return squad.read_squad(path, settings.on_error)


READERS = {"conllu": conllu.read_conllu, "conll": columns.read_columns, "tsv": tables.read_table,
           "csv": tables.read_table, "jsonl": tables.read_table, "squad": read_squad}


def format_of(path: Path, fmt: str) -> str:
    """The file's format (`data.file_format`); for `auto`, a .json file that is SQuAD's JSON is "squad"."""
    found = file_format(path, fmt)
    if fmt == "auto" and suffix_of(path) == ".json" and squad.is_squad(path):
        return "squad"
    return found


def read_split(path: str | Path, fmt: str, settings) -> Split:
    return READERS[fmt](Path(path), fmt, settings)


def check_file(path: str | Path) -> Path:
    path = Path(path)
    if not storage.is_file(path):
        shown = storage.url(path)
        raise InputError(f"{shown}: no such file" if not storage.exists(path) else f"{shown}: not a file")
    return path


def read_task(settings) -> TaskData:
    """The train, dev (and test) files of `settings` (trainer.evaluate.settings.EvalSettings), read by the
    reader of their format and checked by the task kind (`--task`, or the one `auto` picks)."""
    paths = {name: check_file(p) for name, p in (("train", settings.train), ("dev", settings.dev),
             ("test", settings.test)) if p}
    formats = {name: format_of(p, settings.format) for name, p in paths.items()}
    for name, fmt in formats.items():
        if fmt != formats["train"]:
            raise UsageError(f"{paths[name]}: a {fmt} file, but the training file is a {formats['train']} "
                             "file")
    kind = choose_kind(settings.task, formats["train"], paths["train"])
    splits = {name: read_split(p, formats[name], settings) for name, p in paths.items()}
    train = splits["train"]
    if not train.examples:
        raise DataError(f"{train.path}: no examples")
    if settings.task == "auto" and kind.name == "classify" and scores([e.label for e in train.examples]):
        kind = task_kind("regression")
    labels = kind.label_set(train, settings)
    data = TaskData(kind.name, labels, train, splits["dev"], splits.get("test"))
    data.pair = all(isinstance(e, Row) and e.text_b is not None for e in train.examples)
    for split in data.scored.values():
        kind.check_scored(split, data, Faults(Path(split.path), settings.on_error, split.skips))
        if not split.examples:
            raise DataError(f"{split.path}: no examples left to score")
    return data
