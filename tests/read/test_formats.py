"""Every input format: what a document is, what its text looks like, how the format is detected."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.read import document, formats
from corpusprep.read.document import Format
from corpusprep.read.formats import Record, detect_format, normalize_text
from corpusprep.read.streams import numbered
from tests.read.helpers import read_all

WIKI = """<doc id="12" url="http://en.wikipedia.org/wiki?curid=12" title="Anarchism">
Anarchism

Anarchism is a political philosophy.
It has many currents.
</doc>
<doc id="25" url="http://en.wikipedia.org/wiki?curid=25" title="AT&amp;T">
AT&T

AT&T is a company.
</doc>
<doc id="39" url="x" title="Stub">
Stub

</doc>
<doc id="40" url="x" title="Albedo">
Albedo is reflectivity; this first line is not the title.
</doc>
"""


def test_text_blank_lines_separate_documents(tmp_path):
    (tmp_path / "a.txt").write_text("First line.\nSecond line.\n\n\n  \nDoc two.\n\t\nDoc three.")
    docs, stats = read_all(tmp_path / "a.txt")
    assert [d.text for d in docs] == ["First line.\nSecond line.", "Doc two.", "Doc three."]
    assert [d.id for d in docs] == ["a.txt:0", "a.txt:1", "a.txt:2"]
    assert all(d.sentences is None for d in docs)
    assert stats.bytes == (tmp_path / "a.txt").stat().st_size


def test_bert_format_sets_sentences(tmp_path):
    (tmp_path / "bert.txt").write_text("Sentence one.\nSentence two. \n\nOther doc.\n")
    docs, _ = read_all(tmp_path / "bert.txt", format="bert")
    assert docs[0].sentences == ("Sentence one.", "Sentence two.")
    assert docs[0].text == "Sentence one.\nSentence two."
    assert docs[1].sentences == ("Other doc.",)


def test_jsonl_text_field_and_paragraphs(tmp_path):
    rows = [{"body": "Para one.\r\n\r\nPara two.\n \nPara three.", "id": 7}, {"body": "Only one."}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    docs, stats = read_all(tmp_path / "d.jsonl", text_field="body")
    assert [d.text for d in docs] == ["Para one.\nPara two.\nPara three.", "Only one."]
    assert stats.skipped == {}


def test_parquet_streams_row_groups_and_skips_nulls(tmp_path):
    texts = [f"Document number {i}." for i in range(2500)]
    texts[1234] = None
    table = pa.table({"content": texts, "n": range(2500)})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=1000)
    docs, stats = read_all(tmp_path / "d.parquet", text_field="content")
    assert len(docs) == 2499 and stats.skipped == {"null_text": 1}
    assert stats.bytes == sum(len(t.encode()) for t in texts if t)
    assert docs[1234].id == "d.parquet:1235" and docs[1234].text == "Document number 1235."
    assert stats.examples["null_text"] == [f"{tmp_path / 'd.parquet'}: row 1235: column 'content' is null"]


def test_wiki_drops_title_line_and_counts_stubs(tmp_path):
    (tmp_path / "wiki_00").write_text(WIKI)
    docs, stats = read_all(tmp_path / "wiki_00")
    assert [d.text for d in docs] == [
        "Anarchism is a political philosophy.\nIt has many currents.",
        "AT&T is a company.",
        "Albedo is reflectivity; this first line is not the title.",
    ]
    assert [d.id for d in docs] == ["wiki_00:0", "wiki_00:1", "wiki_00:3"]
    assert stats.skipped == {"empty_document": 1} and stats.warnings == 0


def test_wiki_unterminated_doc_and_stray_text_are_warned(tmp_path):
    (tmp_path / "w.txt").write_text('stray\n<doc id="1" title="A">\nA\nOne.\n<doc id="2" title="B">\nTwo.\n')
    docs, stats = read_all(tmp_path / "w.txt", format="wiki")
    assert [d.text for d in docs] == ["One.", "Two."]
    assert stats.warnings == 3
    assert set(stats.examples) == {"unterminated_doc", "text_outside_doc"}


def test_wiki_tags_may_be_indented(tmp_path):
    """An indented `<doc>` used to be read as text outside a block: the document was lost, uncounted."""
    (tmp_path / "w").write_text('<doc id="1" title="A">\nA\nOne.\n</doc>\n  <doc id="2" title="B">\nB\n'
                                'Two.\n\t</doc>\n <doc id="3" title="C">\n</doc>\n')
    docs, stats = read_all(tmp_path / "w")
    assert [d.text for d in docs] == ["One.", "Two."]
    assert stats.documents_seen == 3 and stats.skipped == {"empty_document": 1} and stats.warnings == 0


@pytest.mark.parametrize(("fmt", "head"), [
    ("text", "PAR1 is the magic of Parquet files."),  # under auto, PAR1 says Parquet (docs/manual/input.md)
    *[(fmt, head) for fmt in ("text", "auto") for head in ("BZh is how bzip2 files begin.", "BZh9 too.")],
])
def test_a_text_file_may_begin_like_parquet_or_bzip2(tmp_path, fmt, head):
    """A format given wins over the content's magic; and "BZh" alone is no bzip2 stream in any format."""
    (tmp_path / "notes.txt").write_text(f"{head} More text.\n\nSecond document.\n")
    docs, stats = read_all(tmp_path / "notes.txt", format=fmt)
    assert [d.text for d in docs] == [f"{head} More text.", "Second document."]
    assert not stats.skipped_files


def test_files_without_documents_are_skipped_with_a_reason(tmp_path):
    """A whitespace-only file used to count as a file read with 0 documents and no word why."""
    (tmp_path / "a.txt").write_text("Real document.\n")
    (tmp_path / "blank.txt").write_text("\n  \n\t\n")
    (tmp_path / "blank.jsonl").write_text("\n \n")
    (tmp_path / "w.wiki").write_text("text, but no doc block\n")
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), tmp_path / "none.parquet")
    docs, stats = read_all(tmp_path / "a.txt", tmp_path / "blank.txt", tmp_path / "blank.jsonl",
                           tmp_path / "none.parquet")
    assert len(docs) == 1 and (stats.files_seen, stats.files) == (4, 1)
    assert stats.skipped_files == {"empty_file": 3}
    assert stats.examples["empty_file"][0] == f"{tmp_path / 'blank.txt'}: empty file (only whitespace)"
    _, stats = read_all(tmp_path / "w.wiki", format="wiki")
    assert stats.skipped_files == {"no_documents": 1} and stats.files == 0


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        ("a.jsonl", b"anything", "jsonl"),
        ("a.jsonl.gz", b"\x1f\x8b", "jsonl"),
        ("a.NDJSON", b"", "jsonl"),
        ("a.parquet", b"", "parquet"),
        ("data.bin", b"PAR1\x15\x04", "parquet"),
        ("wiki_00", b'<doc id="1" url="u" title="t">\n', "wiki"),
        ("wiki.txt", b'\xef\xbb\xbf\n<doc id="1">', "wiki"),
        ("records", b'  {"text": "x"}\n', "jsonl"),
        ("notes.txt", b"Plain text.\n", "text"),
    ],
)
def test_detect_format(name, head, expected):
    assert detect_format(name, head) == expected


def parse_shout(lines, path, options, stats):
    """A toy format: one document a line after its `SHOUT:` sign, upper-cased."""
    for lineno, line in numbered(lines):
        if line.strip():
            yield Record(lineno, line.removeprefix("SHOUT:").strip().upper())


def test_an_input_format_is_its_parser_and_one_entry_in_the_table(tmp_path, monkeypatch):
    """docs/extension.md's promise: a parser in formats.py and one FORMAT_TABLE entry; auto then finds the
    format by its suffix and by its sign, beside the others."""
    monkeypatch.setattr(formats, "parse_shout", parse_shout, raising=False)
    shout = Format("shout", "shouted lines", "parse_shout", suffixes=(".shout",), sign=b"SHOUT:")
    monkeypatch.setitem(document.FORMAT_TABLE, "shout", shout)
    (tmp_path / "a.shout").write_text("quiet words\n\nmore\n")
    (tmp_path / "b").write_text("SHOUT: a sign\n")
    (tmp_path / "c.txt").write_text("Plain doc.\n")
    docs, stats = read_all(tmp_path)
    assert [(d.id, d.text) for d in docs] == [
        ("a.shout:0", "QUIET WORDS"), ("a.shout:1", "MORE"), ("b:0", "A SIGN"), ("c.txt:0", "Plain doc.")
    ]
    assert detect_format("x.shout.gz", b"") == "shout" and detect_format("x.jsonl", b"SHOUT:") == "jsonl"


def test_auto_detects_each_file_of_a_mixed_directory(tmp_path):
    (tmp_path / "a.txt").write_text("Plain doc.\n")
    (tmp_path / "b.jsonl").write_text('{"text": "Json doc."}\n')
    (tmp_path / "c").write_text('<doc id="1" title="T">\nT\nWiki doc.\n</doc>\n')
    pq.write_table(pa.table({"text": ["Parquet doc."]}), tmp_path / "d.parquet")
    docs, _ = read_all(tmp_path)
    assert [(d.id, d.text) for d in docs] == [
        ("a.txt:0", "Plain doc."),
        ("b.jsonl:0", "Json doc."),
        ("c:0", "Wiki doc."),
        ("d.parquet:0", "Parquet doc."),
    ]


def test_normalize_text_keeps_clean_text_identical():
    clean = "One paragraph.\nAnother one."
    assert normalize_text(clean) is clean
    assert normalize_text("a\r\rb\r\n\n c \n") == "a\nb\n c "


@pytest.mark.slow
@pytest.mark.shared
def test_enwiki_reads_every_document(enwiki_path):
    docs, stats = read_all(enwiki_path)
    assert stats.documents_seen == 6514  # BENCHMARKS.md's count of <doc> blocks (6,514 articles)
    assert stats.invalid_utf8 == stats.nul_bytes == stats.warnings == 0
    assert docs[0].id == "enwiki_AA.txt.xz:0"
    assert docs[0].text.startswith("Anarchism is a political philosophy")
    assert all("\n\n" not in d.text and not d.text.startswith("<doc") for d in docs)
    assert 95e6 < sum(len(d.text) for d in docs) < stats.bytes
