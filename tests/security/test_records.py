"""Every record corpusprep reads back is parsed by one loader against the schema of its kind: a field of the
wrong type, a missing one, a number out of range, deep nesting or a file that is no record at all is one
line naming the file and the field, and `corpusprep validate` says INVALID through the same loaders."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys

import pytest

from corpusprep.engine import records
from corpusprep.engine.records import load_record, parse_json
from corpusprep.errors import DataError
from tests.security.trust_world import copy, corpusprep, rewrite


def record_files(outputs) -> dict[str, object]:
    """A real file of every kind the world holds, by kind."""
    step = outputs.run / "checkpoints" / "step-0000002"
    return {
        "artifact": outputs.pairs / "artifact.json",
        "shards_manifest": outputs.shards / "manifest.json",
        "pairs_stats": outputs.pairs / "stats.json",
        "vocab_report": outputs.vocab / "vocab_report.json",
        "checkpoint_config": step / "config.json",
        "trainer_state": step / "trainer.json",
        "tokenizer_json": outputs.vocab / "tokenizer.json",
        "tokenizer_config": outputs.vocab / "tokenizer_config.json",
    }


# one damage per kind: (path of the field, a wrong value), and the words the message must hold
DAMAGE = {
    "artifact": (["files"], {"../x": {"size": 1, "sha256": "0" * 64}}, 'files["../x"]: not a relative path'),
    "shards_manifest": (["vocab", "size"], "800", "vocab.size: a string"),
    "pairs_stats": (["pairs"], -1, "pairs: -1, not an integer >= 0"),
    "vocab_report": (["documents", "used"], None, "documents.used: null"),
    "checkpoint_config": (["files", "weights.safetensors", "sha256"], 7,
                          'files["weights.safetensors"].sha256'),
    "trainer_state": (["data", "examples"], 1.5, "data.examples: 1.5"),
    "tokenizer_json": (["normalizer"], [], "normalizer: a list"),
    "tokenizer_config": (["do_lower_case"], "yes", "do_lower_case: a string"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_every_record_kind_names_the_file_and_the_field(outputs, tmp_path, kind):
    path = record_files(outputs)[kind]
    assert load_record(path, kind) is not None  # as written, it reads
    record = json.loads(path.read_text())
    where, value, says = DAMAGE[kind]
    node = record
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    damaged = tmp_path / path.name
    damaged.write_text(json.dumps(record))
    with pytest.raises(DataError) as caught:
        load_record(damaged, kind)
    assert str(caught.value).startswith(f"{damaged}: ") and says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_every_kind_corpusprep_reads_has_a_schema():
    """The table names every kind the code loads: a loader called with a kind it lacks would fail."""
    root = records.__file__.rsplit("/corpusprep/", 1)[0]
    used = set()
    for folder in ("corpusprep", "trainer", "pipelines"):
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if name.endswith(".py"):
                    with open(os.path.join(dirpath, name)) as f:
                        text = f.read()
                    used |= set(re.findall(r'load_record\([^)]*?"([a-z_]+)"', text))
    assert used and used <= set(records.PRODUCERS), used - set(records.PRODUCERS)


def test_each_producer_module_registers_the_kinds_the_table_gives_it():
    """`records.PRODUCERS` and the `register` calls agree: importing every module it names registers every
    kind, and a module cannot register a kind the table gives another (or none)."""
    for module in set(records.PRODUCERS.values()):
        importlib.import_module(module)
    assert set(records.SCHEMAS) == set(records.PRODUCERS)
    with pytest.raises(ValueError, match="registers 'artifact'"):
        records.register("corpusprep.shard.schemas", {"artifact": records.Null()})
    with pytest.raises(ValueError, match="registers 'new_kind'"):
        records.register("corpusprep.shard.schemas", {"new_kind": records.Null()})


def test_the_loader_finds_a_kind_when_only_the_engine_was_imported():
    """A fresh process that imported corpusprep.engine.records alone checks a record of a stage above the
    engine (its producer's schema module imported on first use), names the damaged field as before, and
    loads no torch, numpy or pyarrow doing it."""
    code = (
        "import sys\n"
        "from corpusprep.engine import records\n"
        "from corpusprep.errors import DataError\n"
        "watched = ('torch', 'numpy', 'pyarrow', 'corpusprep.pair.schemas', 'trainer.schemas')\n"
        "print([m for m in watched if m in sys.modules])\n"
        "try:\n"
        "    records.check_record({'pairs': -1}, 'pairs_stats', 'stats.json')\n"
        "except DataError as e:\n"
        "    print(e)\n"
        "records.check_record({'model': {}}, 'checkpoint_config', 'config.json')\n"
        "print([m for m in watched if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["[]", "stats.json: pairs: -1, not an integer >= 0",
                                        "['corpusprep.pair.schemas', 'trainer.schemas']"], done.stderr


@pytest.mark.parametrize("text, says", [
    ("[" * 100_000, "nested too deeply"),
    ('{"a":' * 70 + "1" + "}" * 70, "nested too deeply"),
    ("1" * 5000, "not valid JSON"),
    ('{"a": 1', "not valid JSON"),
    (b"\xff\xfe\x00", "not valid JSON"),
])
def test_json_nesting_and_huge_numbers_are_one_line(text, says):
    with pytest.raises(DataError, match=says) as caught:
        parse_json(text, "x.json")
    assert str(caught.value).startswith("x.json: ")


def test_a_record_that_is_a_fifo_or_a_device_is_refused_without_blocking(outputs, tmp_path):
    pairs = copy(outputs.pairs, tmp_path / "pairs")
    (pairs / "stats.json").unlink()
    os.mkfifo(pairs / "stats.json")  # reading it would wait for a writer forever
    with pytest.raises(DataError, match="not a regular file"):
        load_record(pairs / "stats.json", "pairs_stats")
    result = corpusprep("validate", pairs)
    assert result.code == 1 and "stats.json: not a regular file" in result.err, result.err


def test_validate_calls_a_record_with_a_wrong_typed_field_invalid_naming_it(outputs, tmp_path):
    shards = copy(outputs.shards, tmp_path / "shards")
    manifest = json.loads((shards / "manifest.json").read_text())
    manifest["options"]["masked_lm_prob"] = "0.15"
    rewrite(shards, "manifest.json", manifest)  # its artifact record agrees: only the content can tell
    result = corpusprep("validate", shards)
    assert result.code == 1 and "INVALID" in result.err
    assert "manifest.json: options.masked_lm_prob: a string" in result.err, result.err
    for tool in ("stats", "inspect"):
        line = corpusprep(tool, shards).line
        assert "options.masked_lm_prob: a string" in line, line

    pairs = copy(outputs.pairs, tmp_path / "pairs")
    stats = json.loads((pairs / "stats.json").read_text())
    stats["splits"]["train"]["pairs"] = "many"
    rewrite(pairs, "stats.json", stats)
    result = corpusprep("validate", pairs)
    assert result.code == 1 and 'stats.json: splits["train"].pairs: a string' in result.err, result.err
    line = corpusprep("shard", pairs, "--vocab", outputs.vocab, "-o", tmp_path / "s").line
    assert 'splits["train"].pairs: a string' in line
