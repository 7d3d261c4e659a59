"""curate and bad input, as every stage: one line naming the file, or a counted skip; never a traceback, and
never a file it did not write used or overwritten."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from corpusprep.curate.build import curate
from corpusprep.curate.options import CurateOptions
from corpusprep.engine.outputs import validate
from corpusprep.errors import DataError, UsageError
from corpusprep.read import ReadOptions, ReadStats, iter_documents
from tests.contexts import quiet
from tests.curate.planted import planted_corpus


def corpusprep(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corpusprep", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def small(tmp_path: Path) -> Path:
    return planted_corpus(seed=2, originals=20, near=4, exact=3, shared=0, evaluation=0,
                          foreign=0).write(tmp_path / "c.jsonl")


@pytest.mark.slow  # ~1.8 s on a loaded machine
def test_bad_lines_and_huge_documents_are_counted(tmp_path):
    corpus = small(tmp_path)
    text = corpus.read_text()
    corpus.write_text(text + "not json\n" + json.dumps({"text": "x " * 40_000}) + "\n")
    huge = tmp_path / "huge.txt"
    huge.write_text("\n".join(f"line {i} of one long document" for i in range(3000)))
    stats = curate([str(corpus), str(huge)], tmp_path / "out", CurateOptions(),
                   ReadOptions(max_document_mb=0.02), context=quiet(1))
    assert stats["read"]["skipped"] == {"invalid_json": 1, "too_large": 1}  # a JSONL line over the bound
    assert stats["read"]["documents_cut"] == 1 and stats["read"]["document_parts"] >= 4
    assert stats["documents"] == stats["kept"] + sum(stats["removed"].values()) == stats["read"]["documents"]


def test_a_file_it_did_not_write_is_never_used_nor_overwritten(tmp_path):
    corpus = small(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "removed.jsonl").write_text('{"id": "planted", "reason": "mine"}\n')
    for overwrite in (False, True):
        with pytest.raises(UsageError, match="removed.jsonl: named like curate output, but no corpusprep "
                                             "manifest owns it"):
            curate([str(corpus)], out, CurateOptions(), ReadOptions(), context=quiet(1, overwrite=overwrite))
    assert (out / "removed.jsonl").read_text() == '{"id": "planted", "reason": "mine"}\n'


def test_a_damaged_output_is_named_by_validate_and_its_readers(tmp_path):
    corpus = small(tmp_path)
    out = tmp_path / "out"
    curate([str(corpus)], out, CurateOptions(), ReadOptions(), context=quiet(1))
    what, problems, summary = validate(out)
    assert (what, problems) == ("curate directory", []) and "documents kept" in summary
    removed = out / "removed.jsonl"
    original = removed.read_text()
    removed.write_text(original.replace('"reason": "', '"reason": "\\u0007', 1))
    _, problems, _ = validate(out)
    assert any("removed.jsonl" in p for p in problems)
    with pytest.raises(DataError, match=r"removed.jsonl: \d+ bytes, manifest says \d+; rerun"):
        list(iter_documents([str(out)], ReadOptions()))  # a damaged output is no corpus
    removed.write_text(original)
    kept = out / "kept" / "part-00000.jsonl"
    line = kept.read_text().splitlines()[0]
    doc_id = json.loads(line)["id"]
    forged = line.replace(json.dumps(doc_id), "9" * len(json.dumps(doc_id)), 1)  # same size: not a string id
    kept.write_text(kept.read_text().replace(line, forged, 1))
    stats = ReadStats()
    docs = list(iter_documents([str(out)], ReadOptions(), stats))
    assert stats.skipped == {"bad_id": 1} and doc_id not in {d.id for d in docs}
    kept.write_text("")
    with pytest.raises(DataError, match="part-00000.jsonl"):
        list(iter_documents([str(out)], ReadOptions()))


@pytest.mark.slow  # ~4 s: three commands in subprocesses
def test_the_command_feeds_vocab_and_bad_evaluation_files_are_one_line(tmp_path):
    corpus = small(tmp_path)
    (tmp_path / "bad.conllu").write_text("1\tthree\tfields\n")
    done = corpusprep("curate", corpus, "-o", "out", "--decontaminate", "bad.conllu", "--no-progress",
                      cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "bad.conllu:1:" in done.stderr
    done = corpusprep("curate", corpus, "-o", "out", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "kept" in done.stderr
    done = corpusprep("vocab", "out", "-o", "vocab", "--vocab-size", "200", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "vocab" / "vocab_report.json").read_text())
    kept = json.loads((tmp_path / "out" / "curate.json").read_text())["kept"]
    assert report["documents"]["used"] == kept
