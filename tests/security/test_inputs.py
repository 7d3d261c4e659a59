"""Hostile corpora: any document shape in bounded memory, nesting that would recurse, CR-only line ends,
models and outputs inside a corpus directory. Every case ends in a counted skip or one line, never a crash."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.errors import DataError, InputError
from corpusprep.read import ReadOptions, ReadStats, iter_documents, streams
from tests.read.helpers import read_all
from tests.reliability.helpers import corpusprep, error_line

KB = 1000  # --max-document-mb counts MB of 10^6 bytes
LIMIT_MB = 0.01  # 10 kB: parts of a few lines in these small tests


def utf8(text: str) -> int:
    return len(text.encode())


def read_peak(path: Path, **options) -> tuple[int, list[int], ReadStats]:
    """(peak bytes Python allocated while reading, every document's size, stats): documents are counted,
    not kept, as a streaming stage would."""
    stats = ReadStats()
    sizes = []
    tracemalloc.start()
    try:
        for doc in iter_documents([path], ReadOptions(**options), stats):
            sizes.append(utf8(doc.text))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, sizes, stats


# --- bounded memory for any document shape ---------------------------------------------------------------


@pytest.mark.parametrize("shape", ["one line", "lines"])
def test_a_document_without_blank_lines_is_read_in_bounded_memory(tmp_path, shape):
    """20 MB without a blank line, gzipped (one huge line, or a file of lines without a blank one): it comes
    in parts of at most the bound, and memory holds a block or two and a part, never the 20 MB."""
    line = ("Ein Satz über nichts, über gar nichts. " * 25).strip()  # ~1 kB: few objects for tracemalloc
    text = (line + ("\n" if shape == "lines" else " ")) * (20_000_000 // utf8(line))
    path = tmp_path / "corpus.txt.gz"
    path.write_bytes(gzip.compress(text.encode(), compresslevel=1))
    peak, sizes, stats = read_peak(path, max_document_mb=0.1)
    assert max(sizes) <= 100 * KB
    assert stats.documents_cut == 1 and stats.document_parts == len(sizes) > 150
    assert sum(sizes) >= utf8(text) - len(sizes) - text.count("\n")  # line ends between parts: nothing else
    assert peak < 8_000_000, f"peak {peak:,} bytes for a 20 MB document"  # not the document: 2 blocks, a part


def test_parts_join_back_to_the_text_and_cut_at_line_then_space_then_character(tmp_path):
    """Lines stay whole where they fit; a longer line is cut after a space, and without spaces at a
    character boundary (never inside a UTF-8 sequence); the parts hold every character, in order."""
    lines = ["short line one", "x" * 25_000, "é" * 12_000, ("word " * 5_000).strip(), "last line"]
    (tmp_path / "doc.txt").write_text("\n".join(lines) + "\n\nnext document\n")
    docs, stats = read_all(tmp_path / "doc.txt", max_document_mb=LIMIT_MB)
    assert [d.text for d in docs][-1] == "next document"
    parts = [d.text for d in docs[:-1]]
    assert all(utf8(p) <= 10 * KB for p in parts)
    assert "".join(parts).replace("\n", "").replace(" ", "") == "".join(lines).replace(" ", "")
    assert parts[0] == "short line one"  # the next line did not fit beside it
    word_parts = [p for p in parts if p.startswith("word")]
    assert {w for p in word_parts for w in p.split()} == {"word", "last", "line"}  # no word cut in two
    assert stats.documents_cut == 1 and stats.document_parts == len(parts)
    assert docs[1].id == "doc.txt:1" and docs[-1].id == f"doc.txt:{len(parts)}"  # each part its own id
    assert stats.examples["document_cut"] == [
        f"{tmp_path / 'doc.txt'}:1: document longer than 10,000 bytes (--max-document-mb 0.01): cut into "
        "parts at line boundaries"]


def test_every_format_keeps_the_bound(tmp_path):
    """bert sentences, wiki paragraphs, Parquet cells: cut into parts; a JSONL line over the bound cannot be
    parsed without holding it, so it is skipped and counted (too_large), and the next line is read."""
    long_lines = [f"Sentence number {i} of a long one." for i in range(2_000)]  # ~70 kB
    (tmp_path / "b.txt").write_text("\n".join(long_lines) + "\n")
    bert, _ = read_all(tmp_path / "b.txt", format="bert", max_document_mb=LIMIT_MB)
    assert [s for d in bert for s in d.sentences] == long_lines and len(bert) > 5
    wiki = '<doc id="1" url="u" title="T">\nT\n' + "\n".join(long_lines) + "\n</doc>\n"
    (tmp_path / "w.txt").write_text(wiki)
    docs, stats = read_all(tmp_path / "w.txt", format="wiki", max_document_mb=LIMIT_MB)
    assert "\n".join(d.text for d in docs) == "\n".join(long_lines) and stats.documents_cut == 1
    pq.write_table(pa.table({"text": ["\n".join(long_lines), "small"]}), tmp_path / "p.parquet")
    docs, stats = read_all(tmp_path / "p.parquet", max_document_mb=LIMIT_MB)
    assert docs[-1].text == "small" and stats.document_parts == len(docs) - 1
    assert all(utf8(d.text) <= 10 * KB for d in docs)
    rows = [json.dumps({"text": " ".join(long_lines)}), json.dumps({"text": "kept"})]
    (tmp_path / "j.jsonl").write_text("\n".join(rows) + "\n")
    docs, stats = read_all(tmp_path / "j.jsonl", max_document_mb=LIMIT_MB)
    assert [d.text for d in docs] == ["kept"] and stats.skipped == {"too_large": 1}
    too_large = stats.examples["too_large"][0]
    assert too_large.startswith(f"{tmp_path / 'j.jsonl'}:1: line longer than 10,000 bytes"), too_large
    with pytest.raises(DataError, match=r"j.jsonl:1: line longer than 10,000 bytes"):
        read_all(tmp_path / "j.jsonl", max_document_mb=LIMIT_MB, on_error="fail")


@pytest.mark.slow  # ~1.2 s idle
def test_one_sentence_per_line_streams_through_every_reading_command(tmp_path):
    """The manual's advice for one sentence a line (`--splitter lines`): every line comes out, from
    documents cut at the bound, and the summary says how many were cut."""
    lines = [f"Line {i} says something." for i in range(3_000)]
    (tmp_path / "lines.txt").write_text("\n".join(lines) + "\n")
    result = corpusprep("sentences", tmp_path / "lines.txt", "-o", tmp_path / "out.txt", "--splitter",
                        "lines", "--max-document-mb", "0.01", "--stats", tmp_path / "stats.json")
    assert result.returncode == 0, result.stderr
    sentences = (tmp_path / "out.txt").read_text().split("\n")
    assert [s for s in sentences if s] == lines  # a blank line after each part (a document of its own)
    read = json.loads((tmp_path / "stats.json").read_text())["read"]
    assert read["documents_cut"] == 1 and read["document_parts"] == read["documents_seen"] > 5
    assert "1 documents cut into" in result.stderr
    result = corpusprep("vocab", tmp_path / "lines.txt", "-o", tmp_path / "vocab", "--vocab-size", "200",
                        "--max-document-mb", "0.01", "--no-progress")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "vocab" / "vocab_report.json").read_text())
    assert report["read_stats"]["documents_cut"] == 1
    result = corpusprep("vocab", tmp_path / "lines.txt", "-o", tmp_path / "v2", "--max-document-mb", "0")
    assert result.returncode == 2 and error_line(result).startswith("--max-document-mb 0.0: must be"), result


# --- hostile content -------------------------------------------------------------------------------------


def test_json_nested_thousands_deep_is_a_counted_bad_document(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "\n" + '{"text": ' + "[" * 50_000 + "]" * 50_000 + "}\n"
                    + json.dumps({"text": "A real document."}) + "\n")
    docs, stats = read_all(path)
    assert [d.text for d in docs] == ["A real document."]
    assert stats.skipped == {"invalid_json": 2}
    assert stats.examples["invalid_json"][0] == f"{path}:1: nested too deeply (more than 64 levels)"
    with pytest.raises(DataError, match="deep.jsonl:1: nested too deeply"):
        read_all(path, on_error="fail")


@pytest.mark.parametrize("block", [7, 1 << 20])
def test_cr_lf_and_crlf_are_all_line_ends(tmp_path, monkeypatch, block):
    """Old Mac files end lines with CR alone; a CRLF split between two blocks is still one line end."""
    monkeypatch.setattr(streams, "BLOCK", block)
    (tmp_path / "mac.txt").write_bytes(b"First.\rSecond.\r\rThird doc.\r\nStill third.\n\r\nFourth.\r")
    docs, _ = read_all(tmp_path / "mac.txt")
    assert [d.text for d in docs] == ["First.\nSecond.", "Third doc.\nStill third.", "Fourth."]


def test_models_and_outputs_inside_a_corpus_are_passed_over_and_counted(tmp_path):
    """A Hugging Face export, a tokenizer, loose safetensors, a training run and a corpusprep output inside
    a corpus directory are never read as corpus: each is one counted skip; the text beside them is read."""
    corpus = tmp_path / "corpus"
    (corpus / "texts").mkdir(parents=True)
    (corpus / "texts" / "a.txt").write_text("The only document.\n")
    hf = corpus / "bert-export"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 8}))
    (hf / "model.safetensors").write_bytes(b"\x20\x00\x00\x00\x00\x00\x00\x00" + b'{"w": {}}' + b" " * 23)
    (hf / "vocab.txt").write_text("[PAD]\n[UNK]\nhello\n")
    (corpus / "tok").mkdir()
    (corpus / "tok" / "tokenizer_config.json").write_text("{}")
    (corpus / "tok" / "vocab.txt").write_text("a\nb\n")
    (corpus / "weights").mkdir()
    (corpus / "weights" / "adapter.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    run = corpus / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 2.0}) + "\n")
    (corpus / "vocab").mkdir()
    (corpus / "vocab" / "artifact.json").write_text("{}")
    (corpus / "vocab" / "vocab.txt").write_text("x\n")
    docs, stats = read_all(corpus)
    assert [d.id for d in docs] == ["texts/a.txt:0"]
    assert stats.skipped_directories == {"not_corpus": 5}
    examples = stats.examples["not_corpus"]
    assert f"{hf}: skipped: holds a Hugging Face model, not corpus" in examples
    assert f"{corpus / 'tok'}: skipped: holds a Hugging Face tokenizer, not corpus" in examples
    assert f"{run}: skipped: holds a training run, not corpus" in examples
    with pytest.raises(InputError, match="bert-export: holds a Hugging Face model, not a corpus"):
        read_all(hf)
    docs, stats = read_all(str(corpus / "*" / "*.txt"))  # a glob reaches into them: passed over too
    assert [d.id for d in docs] == ["texts/a.txt:0"] and stats.skipped_directories["not_corpus"] == 3


def test_model_files_are_sniffed_as_binary(tmp_path):
    """Weights whose first KiB looks like text (a safetensors JSON header, pickled names) are binary."""
    import io
    import pickle

    import numpy as np
    from safetensors.numpy import save

    array = io.BytesIO()
    np.save(array, np.zeros(3))
    files = {
        "model.safetensors": save({f"layer.{i}.weight": np.zeros(2, np.float32) for i in range(50)}),
        "old_model.bin": pickle.dumps({"bert.embeddings.word_embeddings.weight": "tensor"}, protocol=2),
        "optimizer.pkl": pickle.dumps({"state": {}, "param_groups": []}),
        "arrays.npy": array.getvalue(),
        "tf_model.h5": b"\x89HDF\r\n\x1a\n" + b"text " * 100,
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        assert streams.sniff_binary(data[: streams.SNIFF]) is not None, name
    (tmp_path / "real.txt").write_text('A text may well begin with "quotes" {and braces}.\n')
    docs, stats = read_all(*sorted(tmp_path.iterdir()))  # files given by name (their folder is a model's)
    assert [d.id for d in docs] == ["real.txt:0"]
    assert stats.skipped_files == {"binary": len(files)}
