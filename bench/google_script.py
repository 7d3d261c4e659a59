"""Google's create_pretraining_data.py (google-research/bert), run by its own code without TensorFlow.

The script uses TensorFlow only at its edges: flags, logging, `tf.gfile` to open files and a
`tf.python_io.TFRecordWriter` fed `tf.train.Example`s. A stand-in module gives it those (files through
`open`, a writer that keeps each example's feature lists as arrays instead of serialising them), so its own
`main` runs as given: its FullTokenizer, `random.Random(--random_seed)`, create_training_instances and
write_instance_to_example_files (ids, padding, masked positions, NSP labels). Its code is never copied into
the project: it is read at bench time from a folder or from the `fetch` tool's snapshot (a bare git
directory: the two files are exported from its HEAD), and a bench skips Google's arm when it is absent.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import importlib
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np

FILES = ("create_pretraining_data.py", "tokenization.py")
FIELDS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
          "masked_lm_weights", "next_sentence_labels")


def script_dir(source: Path | None, into: Path) -> Path | None:
    """A folder holding Google's two files: `source` itself, or exported into `into` from a git directory
    (HEAD); None when there is no such source (the caller skips Google's arm and says so)."""
    if source is None or not source.exists():
        return None
    if all((source / name).is_file() for name in FILES):
        return source
    into.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shown = subprocess.run(["git", "--git-dir", str(source), "show", f"HEAD:{name}"], capture_output=True)
        if shown.returncode:
            return None
        (into / name).write_bytes(shown.stdout)
    return into


class Feature:
    """tf.train.Feature: one of int64_list / float_list, the other empty (the script's logging reads both)."""

    def __init__(self, int64_list=None, float_list=None):
        empty = types.SimpleNamespace(value=[])
        self.int64_list, self.float_list = int64_list or empty, float_list or empty


class Example:
    """tf.train.Example: serialising gives the features themselves (the writer below keeps them)."""

    def __init__(self, features):
        self.features = features

    def SerializeToString(self):  # noqa: N802 (TensorFlow's name)
        return self.features.feature


class Writer:
    """tf.python_io.TFRecordWriter: every written example's features, as a TFRecord's reader sees them."""

    def __init__(self, columns: dict[str, list], _path: str):
        self.columns = columns

    def write(self, feature: dict) -> None:
        for name in FIELDS:
            listed = feature[name].int64_list.value or feature[name].float_list.value
            self.columns[name].append(np.asarray(listed))

    def close(self) -> None:
        pass


def stand_in_tensorflow(columns: dict[str, list]) -> types.ModuleType:
    """The part of TensorFlow 1's API that create_pretraining_data.py and tokenization.py call."""
    tf = types.ModuleType("tensorflow")
    values: dict = {}
    define = lambda name, default, _help: values.__setitem__(name, default)  # noqa: E731
    tf.flags = types.SimpleNamespace(
        FLAGS=types.SimpleNamespace(), DEFINE_string=define, DEFINE_bool=define, DEFINE_integer=define,
        DEFINE_float=define, mark_flag_as_required=lambda name: None, defaults=values,
    )
    tf.logging = types.SimpleNamespace(INFO=20, set_verbosity=lambda level: None, info=lambda *a, **k: None)
    text_file = functools.partial(open, encoding="utf-8")  # tf.gfile.GFile(path, "r"): the script closes it
    tf.gfile = types.SimpleNamespace(GFile=text_file, Glob=glob.glob)
    tf.python_io = types.SimpleNamespace(TFRecordWriter=lambda path: Writer(columns, path))
    tf.train = types.SimpleNamespace(
        Example=Example, Features=lambda feature: types.SimpleNamespace(feature=feature), Feature=Feature,
        Int64List=lambda value: types.SimpleNamespace(value=value),
        FloatList=lambda value: types.SimpleNamespace(value=value),
    )
    return tf


@contextlib.contextmanager
def google_modules(directory: Path, columns: dict[str, list]) -> Iterator[types.ModuleType]:
    """create_pretraining_data imported from `directory` against the stand-in (and `six`, a 2/3 shim the
    tokenizer asks only for PY3), every module it brought removed again afterwards."""
    saved = {name: sys.modules.pop(name, None) for name in ("tensorflow", "six", *[f[:-3] for f in FILES])}
    sys.modules["tensorflow"] = stand_in_tensorflow(columns)
    sys.modules["six"] = types.SimpleNamespace(PY2=False, PY3=True)
    sys.path.insert(0, str(directory))
    try:
        yield importlib.import_module("create_pretraining_data")
    finally:
        sys.path.remove(str(directory))
        for name, module in saved.items():
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module


def create_pretraining_data(directory: Path, **flags) -> dict[str, np.ndarray]:
    """Google's main() with these flags (its names: input_file, vocab_file, random_seed, ...): its
    instances as flat columns (ids, types, positions, labels) and per-row counts (rows, predictions, nsp),
    padding dropped as a TFRecord reader drops it (input_mask, masked_lm_weights)."""
    columns: dict[str, list] = {name: [] for name in FIELDS}
    with google_modules(directory, columns) as script:
        script.FLAGS.__dict__.update(script.flags.defaults | {"output_file": "in-memory"} | flags)
        script.main(None)
    lengths = [int(m.sum()) for m in columns["input_mask"]]
    predictions = [int(w.sum()) for w in columns["masked_lm_weights"]]

    def flat(name: str, counts: list[int]) -> np.ndarray:
        return np.concatenate([v[:n] for v, n in zip(columns[name], counts, strict=True)]).astype(np.int64)

    return {
        "ids": flat("input_ids", lengths),
        "types": flat("segment_ids", lengths),
        "positions": flat("masked_lm_positions", predictions),
        "labels": flat("masked_lm_ids", predictions),
        "rows": np.asarray(lengths),
        "predictions": np.asarray(predictions),
        "nsp": np.asarray([int(v[0]) for v in columns["next_sentence_labels"]]),
    }
