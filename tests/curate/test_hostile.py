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
from corpusprep.errors import DataError, InputError, UsageError
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


@pytest.mark.slow  # ~10 s: 32 small runs
def test_random_corpora_and_options_give_counts_that_add_up_or_one_clean_error(tmp_path):
    """Random small corpora (copies, near-copies, stubs, blank and odd lines, shared boilerplate) under random
    option sets, chunked small so that every step meets empty and one-document chunks: every run adds up
    (read = kept + removed, the kept file holds the kept), gives the same kept set for one and two workers,
    or refuses with the library's one-line errors, never another exception (once: everything removed by a
    filter crashed dedup on an empty band)."""
    import random

    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    base = [" ".join(rng.choices(words, k=rng.randint(1, 120))) for _ in range(12)]
    boiler = "\nThis page was last edited by a bot and is shared boilerplate of at least sixty characters."
    odd = ["", "...", "$$ %% &&", "\u00e9t\u00e9 " * 30]
    pool = base + [b.upper() for b in base[:3]] + [b + " omega" for b in base[3:6]] + odd
    filters = ["word-count", "word-length", "symbol-ratio", "ellipsis-lines", "repeated-lines",
               "repeated-ngrams", "boilerplate-lines"]
    for trial in range(16):
        docs = [rng.choice(pool) + (boiler if rng.random() < 0.3 else "") for _ in range(rng.randint(1, 25))]
        corpus = tmp_path / f"c{trial}.jsonl"
        corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs)))
        options = CurateOptions(exact=rng.random() < 0.7, near=rng.random() < 0.7, lines=rng.random() < 0.4,
                                filters=tuple(rng.sample(filters, rng.randint(0, 3))),
                                shingle=rng.choice([1, 3, 5]), docs_per_chunk=rng.choice([1, 2, 7, 4096]),
                                min_line_chars=rng.choice([1, 60]))
        kept = []
        for workers in (1, 2):
            out = tmp_path / f"out{trial}-{workers}"
            try:
                stats = curate([str(corpus)], out, options, ReadOptions(), context=quiet(workers))
            except (DataError, UsageError) as error:
                assert "\n" not in str(error), (trial, options, str(error))
                kept.append(("refused", str(error).replace(str(out), "OUT")))
                continue
            assert stats["kept"] + sum(stats["removed"].values()) == stats["documents"], (trial, options)
            if not stats["kept"]:  # read as input, an output with nothing kept says so
                with pytest.raises(InputError, match="every one was removed"):
                    list(iter_documents([str(out)], ReadOptions(), ReadStats()))
                kept.append([])
                continue
            texts = [d.text for d in iter_documents([str(out)], ReadOptions(), ReadStats())]
            assert len(texts) == stats["kept"], (trial, options)
            kept.append(texts)
        assert kept[0] == kept[1], (trial, options)
