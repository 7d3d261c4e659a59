"""Quotation marks on real prose: what a splitter does with the quotes of novels, ours and installed peers.

    .venv/bin/python bench/quotes.py --language fr ELTeC-fra/level1/ --language de ELTeC-deu/level1/
    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/quotes.py ...   # another version of ours

Input: ELTeC's TEI novels (https://github.com/COST-ELTeC/ELTeC-fra, ELTeC-deu, ...; each `<p>` a paragraph,
notes left out) or plain text, a paragraph a line; a directory is read recursively. Novels are where quotes
are: dialogue in French spaced guillemets (« … », with spaces, no-break spaces or narrow ones), in German
»…« and „…“. There is no gold segmentation for them, so the columns count what is wrong whatever the gold:

- lone quote: a "sentence" with no letter or digit that holds a closing quote (`»`, `! »`): a quotation's
  closing mark cut off from its last sentence.
- starts with a closing quote: a sentence inside a paragraph that begins with the language's closing mark
  (`» Puis rien.`; French »…« at a paragraph's start is a quotation continued from the paragraph before,
  "guillemets de suite", and correct).
- closed, not split: a terminal mark, a closing quote, a space and a capital with no boundary after the quote
  (`« Tu peux entrer. » La petite fille parut`): a missed boundary, nearly always.
Boundary F1 on gold text is bench/sentences.py's (UD dev sets, English golden rules and EWT).
"""

from __future__ import annotations

import argparse
import html
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from corpusprep.errors import UsageError
from corpusprep.split import get_splitter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sentences import head  # noqa: E402  the first megabytes of a list of texts

# The closing marks of each language's quotations (» closes in French, « in German).
CLOSING = {"fr": "»›”", "de": "«‹“‘", "da": "«‹”", "cs": "“‘", "pl": "”’»", "sv": "”»", "fi": "”»",
           "ru": "»“"}
PEERS = ("pysbd", "sentencex", "blingfire")
_PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", re.S)
_NOTE = re.compile(r"<note\b.*?</note>", re.S)
_TAG = re.compile(r"<[^>]+>")


def paragraphs(path: Path, megabytes: float) -> list[str]:
    """The paragraphs of the files under `path` (TEI `.xml`: its `<p>` elements; else a paragraph a line),
    in file order, up to `megabytes` of text."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    out, size = [], 0
    for file in files:
        for para in _read(file):
            out.append(para)
            size += len(para.encode())
            if size >= megabytes * 1e6:
                return out
    return out


def _read(file: Path) -> Iterator[str]:
    text = file.read_text(encoding="utf-8", errors="replace")
    if file.suffix.lower() == ".xml":
        body = _NOTE.sub(" ", text.split("<body", 1)[-1])
        chunks = (html.unescape(_TAG.sub("", m.group(1))) for m in _PARAGRAPH.finditer(body))
    else:
        chunks = iter(text.splitlines())
    for chunk in chunks:
        para = " ".join(chunk.split())
        if para:
            yield para


def count(split: Callable[[str], list[str]], paras: list[str], closing: str) -> dict:
    """The columns for one splitter on one language's paragraphs (see the module docstring)."""
    closed = re.compile(rf"[.!?…]\s*[{closing}](?=\s+[^\W\d_])")
    c = {"sentences": 0, "lone": 0, "starts": 0, "missed": 0, "cpu": 0.0}
    for para in paras:
        t = time.process_time()
        sentences = split(para)
        c["cpu"] += time.process_time() - t
        c["sentences"] += len(sentences)
        ends, at = set(), 0
        for k, sentence in enumerate(sentences):
            at = para.find(sentence, at)
            if at < 0:  # a peer that changes the text: its sentences can no longer be placed
                break
            at += len(sentence)
            ends.add(at)
            if not any(ch.isalnum() for ch in sentence):
                c["lone"] += any(ch in closing for ch in sentence)
            elif k and sentence[0] in closing and not sentence[1:2].isalnum():
                c["starts"] += 1
        c["missed"] += sum(m.end() not in ends and para[m.end() :].lstrip()[:1].isupper()
                           for m in closed.finditer(para))
    return c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--language", nargs=2, action="append", metavar=("CODE", "PATH"), required=True,
                        help="a language code and its novels (a TEI file, a text file or a directory)")
    parser.add_argument("--mb", type=float, default=1e6, help="read at most this many MB per language")
    parser.add_argument("--slow-mb", type=float, default=2, help="pySBD (slow) reads at most this many MB")
    parser.add_argument("--splitters", default="default," + ",".join(PEERS))
    args = parser.parse_args()
    print(f"# {' '.join(['.venv/bin/python', 'bench/quotes.py', *sys.argv[1:]])}\n")
    print("| lang | MB | paragraphs | splitter | sentences | lone quote | starts with a closing quote "
          "| closed, not split | MB/s |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for code, path in args.language:
        everything = paragraphs(Path(path), args.mb)
        for name in args.splitters.split(","):
            try:
                split = get_splitter(name, code)
            except UsageError:  # not installed, or not for this language (pySBD)
                continue
            paras = head(everything, args.slow_mb) if name == "pysbd" else everything
            mb = sum(len(p.encode()) for p in paras) / 1e6
            c = count(split, paras, CLOSING.get(code, "»”"))
            print(f"| {code} | {mb:.1f} | {len(paras):,} | {name} | {c['sentences']:,} | {c['lone']:,} | "
                  f"{c['starts']:,} | {c['missed']:,} | {mb / max(c['cpu'], 1e-9):.1f} |")


if __name__ == "__main__":
    main()
