"""Input resolution: files, directories, globs; order, source names, what is left out."""

from __future__ import annotations

import pytest

from corpusprep.engine import storage
from corpusprep.errors import DataError, InputError
from corpusprep.read import ReadOptions, iter_documents, resolve_inputs


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


# --- objects on S3 (a real S3 server on 127.0.0.1: the `s3_server` fixture) ------------------------------


def test_objects_resolve_as_the_same_files_on_disk_would(s3_dir, tmp_path):
    names = ["b.jsonl", "a.jsonl", "sub/c.jsonl", ".hidden.jsonl", "sub/x.txt"]
    for name in names:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text('{"text": "One."}\nnot json\n')
        storage.write_bytes(f"{s3_dir}/{name}", (tmp_path / name).read_bytes())
    for pattern in ("", "/*.jsonl", "/**/*.jsonl", "/sub/c.jsonl"):
        local = [source for _, source in resolve_inputs([f"{tmp_path}{pattern}"])]
        remote = resolve_inputs([f"{s3_dir}{pattern}"])
        assert [source for _, source in remote] == local and local, pattern
        assert all(storage.url(path).startswith(s3_dir + "/") for path, _ in remote)
    with pytest.raises(DataError, match=f"^{s3_dir}/a.jsonl:2: not valid JSON"):  # the URL, with its //
        list(iter_documents([f"{s3_dir}/a.jsonl"], ReadOptions(on_error="fail")))
    with pytest.raises(InputError, match=f"^{s3_dir}/nothing: no such file or directory$"):
        resolve_inputs([f"{s3_dir}/nothing"])
