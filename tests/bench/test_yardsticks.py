"""bench/yardsticks.py's task files: which splits each task is scored on, from the folders at hand."""

from __future__ import annotations

from bench import yardsticks


def test_upos_scores_test_only_when_the_public_copy_is_there(tmp_path, monkeypatch):
    shared, data = tmp_path / "shared", tmp_path / "data"
    for name in ("en_ewt-ud-train.conllu.xz", "en_ewt-ud-dev.conllu.xz"):
        (shared / "ud_en_ewt").mkdir(parents=True, exist_ok=True)
        (shared / "ud_en_ewt" / name).write_bytes(b"")
    monkeypatch.setattr(yardsticks, "SHARED", shared)
    assert set(yardsticks.task_files("upos", data, tmp_path)) == {"train", "dev"}
    (data / "ud_en_ewt").mkdir(parents=True)
    (data / "ud_en_ewt" / "en_ewt-ud-test.conllu").write_text("")
    files = yardsticks.task_files("upos", data, tmp_path)
    assert files["test"] == data / "ud_en_ewt" / "en_ewt-ud-test.conllu"
    assert files["dev"].parent == shared / "ud_en_ewt"
    (shared / "ud_en_ewt" / "en_ewt-ud-dev.conllu.xz").unlink()
    assert yardsticks.task_files("upos", data, tmp_path) is None  # a missing split: the task is skipped


def test_ner_needs_all_three_conll_files(tmp_path):
    conll = tmp_path / "conll2003"
    conll.mkdir()
    for name in ("eng.train", "eng.testa"):
        (conll / name).write_text("")
    assert yardsticks.task_files("ner", tmp_path, tmp_path) is None
    (conll / "eng.testb").write_text("")
    assert yardsticks.task_files("ner", tmp_path, tmp_path) == {
        "train": conll / "eng.train", "dev": conll / "eng.testa", "test": conll / "eng.testb"}
