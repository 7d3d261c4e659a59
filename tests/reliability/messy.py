"""One generated messy corpus holding every kind of bad input the issue lists, in one directory.

Files are named so that the sorted read order is obvious: `a_`..`i_` hold per-document problems (skipped
and counted under the default policy) next to clean documents; `x_`..`z_` are whole files that cannot be
read (fatal under the default policy, skipped under `--on-error skip`). `nothing/` holds only a hidden file.
"""

from __future__ import annotations

import gzip
import json
import lzma
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from corpusprep.engine.rng import rng_for

WORDS = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "paper", "light", "music", "garden",
         "window", "silver", "market", "forest", "engine", "harbor", "letter", "summer", "winter"]
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 8
SCRIPTS = {  # one document per script, several sentences each so that they make pairs
    "cjk": "中文文本，测试一下。这是第二句话。日本語のテキストです。한국어 문장입니다.",
    "arabic": "النص العربي يُقرأ كما هو. هذه جملة ثانية. وهذه جملة ثالثة.",
    "emoji": "Emoji 😀 stay intact. Thumbs 👍🏽 and flags 🇩🇪 too. A family 👩‍👩‍👧 joined by ZWJ.",
}
LONG_SENTENCE_WORDS = 10_000
# Not 50 MB: the stages only ever see the line the reader rebuilds from its 1 MiB blocks, so 1.5 MiB (two
# blocks) exercises the same path; test_bad_input_read::test_50_mb_file_without_newline shows the 50 MB
# file is read in bounded memory.
ONE_LINE_BYTES = 3 * 2**19
CUT_COPIES = 200  # the truncated .gz/.xz hold this many copies of a_clean.txt: 3 MiB, so the cut is past
# the reader's first block and some documents come out before it


@dataclass(frozen=True)
class Messy:
    root: Path
    per_document: list[Path]  # files whose problems are per document (the default policy skips them)
    unreadable: list[Path]  # whole files that cannot be read (the default policy fails)
    locked: Path  # the file a test makes unreadable (tests run as root: chmod 000 would not stop them)
    empty_dir: Path
    documents: dict[str, int]  # records (documents, good or bad) in each per-document file
    long_sentence: str  # the 10,000-word sentence of g_long_sentence.txt


def sentence(rng, n: int) -> str:
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), n)).capitalize() + "."


def write_messy_corpus(root: Path, clean_documents: int = 60) -> Messy:
    rng = rng_for(0, "messy-corpus")
    root.mkdir(parents=True)
    docs = [" ".join(sentence(rng, int(rng.integers(4, 12))) for _ in range(int(rng.integers(3, 9))))
            for _ in range(clean_documents)]
    (root / "a_clean.txt").write_text("\n\n".join(docs) + "\n")
    lines = [
        {"text": "A good line. It has two sentences."},
        '{"text": "unterminated',
        {"title": "no text field"},
        {"text": None},
        {"text": " \n\t "},
        {"text": "Another good line. Also two sentences."},
    ]
    rows = [x if isinstance(x, str) else json.dumps(x) for x in lines]  # the str one is broken JSON
    (root / "b_lines.jsonl").write_text("\n".join(rows) + "\n")
    (root / "c_invalid_utf8.txt").write_bytes(b"Before the bad byte \xe9t\xe9 in the middle. After it.\n")
    (root / "d_nul.txt").write_bytes(b"Te\x00xt with a NUL. Still text.\n")
    (root / "e_empty.txt").write_bytes(b"")
    (root / "f_image.png").write_bytes(PNG)
    long = " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), LONG_SENTENCE_WORDS)).capitalize()
    (root / "g_long_sentence.txt").write_text(f"It starts short. {long}. It ends short.\n")
    with open(root / "h_one_line.txt", "wb") as f:  # many sentences, no newline at all
        chunk = (" ".join(sentence(rng, 8) for _ in range(2000)) + " ").encode()
        while f.tell() < ONE_LINE_BYTES:
            f.write(chunk)
    (root / "i_scripts.txt").write_text("\n\n".join(SCRIPTS.values()) + "\n")
    text = ("\n\n".join(docs) + "\n").encode() * CUT_COPIES
    for suffix, data in ((".gz", gzip.compress(text)), (".xz", lzma.compress(text, preset=1))):
        (root / f"x_cut.txt{suffix}").write_bytes(data[: len(data) // 2])
    (root / "y_locked.txt").write_text("Readable by root, refused by the test. Second sentence.\n")
    no_text = pa.table({"body": ["A Parquet file without the text column."]})
    pq.write_table(no_text, root / "z_no_text.parquet")
    empty_dir = root / "nothing"
    empty_dir.mkdir()
    (empty_dir / ".hidden").write_text("Hidden files are not input.\n")
    per_document = [root / n for n in ("a_clean.txt", "b_lines.jsonl", "c_invalid_utf8.txt", "d_nul.txt",
                                       "e_empty.txt", "f_image.png", "g_long_sentence.txt", "h_one_line.txt",
                                       "i_scripts.txt")]
    unreadable = [root / n for n in ("x_cut.txt.gz", "x_cut.txt.xz", "y_locked.txt", "z_no_text.parquet")]
    documents = {"a_clean.txt": clean_documents, "b_lines.jsonl": len(lines), "c_invalid_utf8.txt": 1,
                 "d_nul.txt": 1, "g_long_sentence.txt": 1, "h_one_line.txt": 1, "i_scripts.txt": len(SCRIPTS)}
    return Messy(root, per_document, unreadable, root / "y_locked.txt", empty_dir, documents, long)
