"""Input resolution: files, directories, globs; order, source names, what is left out."""

from __future__ import annotations

import pytest

from corpusprep.errors import InputError
from corpusprep.read import resolve_inputs


@pytest.fixture
def tree(tmp_path):
    names = ["b/2.txt", "b/10.txt", "a.txt", "c/deep/z.jsonl"]
    ignored = [".hidden.txt", ".git/config", "b/.x.tmp-12", "markers/task-1.done.json", "c/.DS_Store"]
    for name in names + ignored:
        path = tmp_path / "corpus" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("text\n")
    return tmp_path / "corpus"


def sources(found):
    return [source for _, source in found]


def test_directory_is_walked_sorted_without_hidden_or_marker_files(tree):
    found = resolve_inputs([tree])
    assert sources(found) == ["a.txt", "b/10.txt", "b/2.txt", "c/deep/z.jsonl"]
    assert [p for p, _ in found][0] == tree / "a.txt"


def test_file_argument_uses_its_name_and_arguments_keep_their_order(tree):
    assert sources(resolve_inputs([tree / "b" / "2.txt", tree / "a.txt"])) == ["2.txt", "a.txt"]


def test_glob_sources_are_relative_to_the_pattern_base(tree):
    assert sources(resolve_inputs([f"{tree}/b/*.txt"])) == ["10.txt", "2.txt"]
    assert sources(resolve_inputs([f"{tree}/**/*.jsonl"])) == ["c/deep/z.jsonl"]


def test_a_file_reached_twice_is_read_once(tree):
    assert sources(resolve_inputs([tree / "a.txt", tree]))[1:] == ["b/10.txt", "b/2.txt", "c/deep/z.jsonl"]


def test_ids_do_not_depend_on_where_the_corpus_lives(tree, tmp_path):
    moved = tmp_path / "elsewhere"
    tree.rename(moved)
    assert sources(resolve_inputs([moved])) == ["a.txt", "b/10.txt", "b/2.txt", "c/deep/z.jsonl"]


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("missing.txt", "missing.txt: no such file or directory"),
        ("only_hidden", "only_hidden: directory has no input files"),
        ("*.nothing", "*.nothing: no files match this pattern"),
    ],
)
def test_unusable_inputs_raise_input_error(tmp_path, monkeypatch, arg, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "only_hidden").mkdir()
    (tmp_path / "only_hidden" / ".secret").write_text("x")
    with pytest.raises(InputError, match=message.replace("*", r"\*")) as error:
        resolve_inputs([arg])
    assert error.value.exit_code == 2


def test_no_inputs_at_all(tmp_path):
    with pytest.raises(InputError, match="no input paths"):
        resolve_inputs([])


def test_corpusprep_outputs_are_never_read_as_corpus(tree):
    outputs = [("pairs", "artifact.json"), ("running", ".work/run.json"), ("vocab", ".corpusprep.lock")]
    for output, owned in outputs:
        (tree / output / "train").mkdir(parents=True)
        (tree / output / "train" / "part.txt").write_text("text\n")
        (tree / output / owned).parent.mkdir(parents=True, exist_ok=True)
        (tree / output / owned).write_text("{}")
    assert sources(resolve_inputs([tree])) == ["a.txt", "b/10.txt", "b/2.txt", "c/deep/z.jsonl"]
    with pytest.raises(InputError, match="corpusprep output"):
        resolve_inputs([tree / "pairs"])
