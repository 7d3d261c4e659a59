"""Sentence splitters compared: ours against pySBD, BlingFire, sentencex and syntok (those installed).

    .venv/bin/python bench/sentences.py                 # 20 MB speed sample, slow peers on 1 MB
    .venv/bin/python bench/sentences.py --mb 100 --slow-mb 2
    .venv/bin/python bench/sentences.py --long-lines      # linear time in a line's length (no ../shared)

Columns:
- golden: pySBD's 48 English golden rules (../shared/sbd/pysbd_golden_rules_en.jsonl) split exactly right.
- EWT F1: sentence-boundary F1 on the 318 UD English-EWT dev documents, each document's paragraphs joined by
  a single space (paragraph ends are found like any other boundary). A boundary is the end of a sentence,
  written as the number of non-whitespace characters before it, so whitespace changes do not matter.
  Predicted and gold boundary sets are compared per document; TP/precision/recall are micro-averaged over
  all documents. "F1" counts every sentence end (as the reference figures for the peers do); "F1 inner"
  leaves out each document's end, which every splitter gets for free.
- MB/s: UTF-8 megabytes of Wikipedia text (../shared/corpus/enwiki_AA.txt.xz, whole documents, decompressed
  before timing) split per second by one process (one core); only the splitting is timed. "MB/s" divides by
  the process's CPU time, "wall MB/s" by elapsed time: on a shared machine the first is the fair per-core
  figure (the ratios use it), on an idle one the two agree. pySBD and
  syntok are too slow for the full sample and run on its first --slow-mb megabytes (shown in "sample").
- Languages: boundary F1 on the 18 Universal Dependencies dev sets (../shared/sbd/ud/, scored as its
  score_ud.py does: each paragraph one line, its sentences joined by a space, or by nothing in Chinese and
  Japanese; only inner boundaries count) and MB/s (CPU time) on the same text, paragraph by paragraph, for
  ours (told the language) and each peer (told the language where it takes one; pySBD only in its languages).
- Long line: the first --long-mb megabytes of the Wikipedia sample split as one line against the same text in
  its own lines (the split of a single line must stay linear in its length).
- --long-lines alone: a synthetic paragraph (abbreviations, numbers, bullets, CJK, "?!") of 125 kB and 4x
  that, as one line and in short lines; prints the CPU-time ratios. Linear code gives ~4x and ~1x; the
  quadratic code this replaced (copying the text before each candidate) gave 16x and 60x. Was a unit test
  (timing asserts are flaky on a shared machine): a regression shows here as a ratio far above those.
"""

from __future__ import annotations

import argparse
import lzma
import sys
import time
from collections.abc import Callable
from pathlib import Path

from corpusprep.errors import UsageError
from corpusprep.split import get_splitter
from corpusprep.split.evaluate import (
    Paragraph,
    boundaries,
    golden_rule_failures,
    load_ewt_documents,
    load_golden_rules,
    load_ud_paragraphs,
    ud_score,
)
from corpusprep.split.peers import syntok_splitter

SHARED = Path(__file__).resolve().parents[2] / "shared"
SLOW = {"pysbd", "syntok"}
# The order of ../shared/sbd/ud/README.md: European languages, then the others.
UD_LANGUAGES = ("de", "fr", "es", "pt", "nl", "ru", "tr", "fi", "sv", "zh", "ja", "ko", "id", "vi", "it")
UD_LANGUAGES += ("pl", "hi", "ar")
UD_PEERS = ("pysbd", "sentencex", "blingfire")


def read_wiki(path: Path, megabytes: float) -> list[str]:
    """Whole WikiExtractor documents (title line, blank line, one paragraph per line) up to `megabytes`."""
    docs, lines, size = [], [], 0
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("<doc "):
                lines = []
            elif line.startswith("</doc>"):
                text = "".join(lines).strip("\n")
                docs.append(text)
                size += len(text.encode())
                if size >= megabytes * 1e6:
                    break
            else:
                lines.append(line)
    return docs


def head(docs: list[str], megabytes: float) -> list[str]:
    out, size = [], 0
    for doc in docs:
        if size >= megabytes * 1e6:
            break
        out.append(doc)
        size += len(doc.encode())
    return out


def ewt_f1(split: Callable[[str], list[str]], documents: list[tuple[str, list[str]]]) -> tuple[float, float]:
    """(F1 counting every sentence end, F1 over inner boundaries only); see the module docstring."""
    tp = pred = gold = tp_in = pred_in = gold_in = 0
    for text, gold_sentences in documents:
        want, total = boundaries(gold_sentences)
        got, got_total = boundaries(split(text))
        if got_total != total:
            raise SystemExit(f"splitter changed the text of {text[:60]!r}")
        tp_in, pred_in, gold_in = tp_in + len(got & want), pred_in + len(got), gold_in + len(want)
        tp, pred, gold = tp + len(got & want) + 1, pred + len(got) + 1, gold + len(want) + 1
    return _f1(tp, pred, gold), _f1(tp_in, pred_in, gold_in)


def _f1(tp: int, predicted: int, gold: int) -> float:
    return 2 * tp / (predicted + gold) if predicted + gold else 1.0


def speed(split: Callable[[str], list[str]], docs: list[str]) -> tuple[float, float]:
    """(MB per CPU second of this process, MB per wall-clock second)."""
    size = sum(len(d.encode()) for d in docs) / 1e6
    cpu, wall = time.process_time(), time.perf_counter()
    for doc in docs:
        split(doc)
    return size / (time.process_time() - cpu), size / (time.perf_counter() - wall)


def load_splitter(name: str) -> Callable[[str], list[str]]:
    return syntok_splitter() if name == "syntok" else get_splitter(name)


def paragraph_speed(split: Callable[[str], list[str]], paragraphs: list[Paragraph], repeat: int) -> float:
    """MB per CPU second, splitting one paragraph at a time, `repeat` passes over the text."""
    size = sum(len(p.text.encode()) for p in paragraphs) * repeat / 1e6
    cpu = time.process_time()
    for _ in range(repeat):
        for p in paragraphs:
            split(p.text)
    return size / (time.process_time() - cpu)


def languages_table(ud_dir: Path, peers: list[str]) -> None:
    """Per-language F1 and MB/s for ours and every installed peer; the macro averages in the last rows."""
    names = ["default", *peers]
    f1: dict[str, dict[str, float]] = {name: {} for name in names}
    columns = [f"{n} F1" for n in names] + [f"{n} MB/s" for n in names]
    print("| lang | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * (2 * len(names)))
    for lang in UD_LANGUAGES:
        paragraphs = load_ud_paragraphs(ud_dir / f"{lang}_dev.jsonl", lang)
        scores, speeds = [], []
        for name in names:
            try:
                split = get_splitter(name, lang)
            except UsageError:  # not installed, or no rules for this language (pySBD)
                scores.append("–")
                speeds.append("–")
                continue
            f1[name][lang] = ud_score(split, paragraphs).f1
            scores.append(f"{f1[name][lang]:.3f}")
            rate = paragraph_speed(split, paragraphs, 5 if name == "default" else 1)
            speeds.append(f"{rate:.1f}" if rate >= 1 else f"{rate:.2f}")
        print(f"| {lang} | " + " | ".join(scores) + " | " + " | ".join(speeds) + " |")
    best = [max(f1[n].get(lang, 0.0) for n in peers) for lang in UD_LANGUAGES] if peers else []
    macro = [
        f"{sum(f1[n].values()) / len(UD_LANGUAGES):.3f}" if len(f1[n]) == len(UD_LANGUAGES) else "–"
        for n in names
    ]
    print(f"| macro, {len(UD_LANGUAGES)} languages | " + " | ".join(macro) + " |" + " |" * len(names))
    if best:
        print(f"\nbest peer per language, macro: {sum(best) / len(best):.3f}")
        gaps = [f"{lang} {f1['default'][lang] - b:+.3f}" for lang, b in zip(UD_LANGUAGES, best, strict=True)]
        print("ours minus the best peer: " + ", ".join(gaps))


def long_line(docs: list[str], megabytes: float) -> None:
    text = "\n".join(head(docs, megabytes))
    one_line = text.replace("\n", " ")
    cpu = time.process_time()
    get_splitter("default")(text)
    lines = time.process_time() - cpu
    cpu = time.process_time()
    get_splitter("default")(one_line)
    single = time.process_time() - cpu
    size = len(text.encode()) / 1e6
    print(f"long line: {size:.1f} MB as one line {single:.2f} s, in its {text.count(chr(10)) + 1} lines "
          f"{lines:.2f} s (ratio {single / lines:.2f})")


LONG_LINE_UNIT = (
    "Dr. Smith met 3 people at 5 p.m. in the U.S. capital. They discussed items 1. and 2. of the plan. "
    "• A bullet point • and another 1) first 2) second. 中文句子。日本語です！ Wait... what?! "
)


# French dialogue typeset with no-break spaces inside guillemets and before ? ! : (the quote rules look at a
# bounded window too, whatever the language).
NBSP = "\u00a0"
DIALOGUE_UNIT = (
    f"Il demanda{NBSP}: «{NBSP}Vous venez ce soir{NBSP}?{NBSP}» Elle rit. «{NBSP}Peut-être, si le temps le "
    f"permet{NBSP}!{NBSP}» Puis elle partit. "
)


def _cpu_seconds(text: str, language: str = "en", repeats: int = 3) -> float:
    """The best of `repeats` splits' CPU time: a busy machine only ever adds time."""
    split = get_splitter("default", language)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        split(text)
        best = min(best, time.process_time() - start)
    return best


def long_lines_scaling() -> None:
    """A paragraph 4x longer should take ~4x the time, one long line ~the time of the same text in lines: an
    English paragraph (abbreviations, numbers, bullets, CJK) and French dialogue (guillemets)."""
    print("# .venv/bin/python bench/sentences.py --long-lines  (CPU seconds, best of 3)")
    for name, unit, language, end in (("English", LONG_LINE_UNIT, "en", "?! "),
                                      ("French dialogue", DIALOGUE_UNIT, "fr", f"{NBSP}» ")):
        small = unit * (125_000 // len(unit))
        large = small * 4
        in_lines = large.replace(end, end.rstrip() + "\n")
        one_line, short = _cpu_seconds(large, language), _cpu_seconds(small, language)
        lines = _cpu_seconds(in_lines, language)
        count = in_lines.count("\n") + 1
        print(f"{name}: {len(small.encode()) / 1e3:.0f} kB paragraph {short:.3f} s; 4x as one line "
              f"{one_line:.3f} s (ratio {one_line / short:.2f}, linear ~4); the same in {count:,} lines "
              f"{lines:.3f} s (one line / lines {one_line / lines:.2f}, linear ~1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=20, help="Wikipedia sample for the speed column (MB)")
    parser.add_argument("--slow-mb", type=float, default=1, help="smaller sample for pySBD and syntok (MB)")
    parser.add_argument("--splitters", default="default,blingfire,pysbd,sentencex,syntok")
    parser.add_argument("--long-mb", type=float, default=40, help="text split as one line (MB; 0: skip)")
    parser.add_argument("--shared", type=Path, default=SHARED, help="folder holding corpus/ and sbd/")
    parser.add_argument("--long-lines", action="store_true", help="only the synthetic linear-time check")
    args = parser.parse_args()
    if args.long_lines:
        long_lines_scaling()
        return

    rules = load_golden_rules(args.shared / "sbd/pysbd_golden_rules_en.jsonl")
    ewt = load_ewt_documents(args.shared / "sbd/ewt_dev_documents_sentences.jsonl")
    docs = read_wiki(args.shared / "corpus/enwiki_AA.txt.xz", max(args.mb, args.long_mb))
    long_docs, docs = docs, head(docs, args.mb)
    size = sum(len(d.encode()) for d in docs) / 1e6
    print(f"# {' '.join(['.venv/bin/python', 'bench/sentences.py', *sys.argv[1:]])}")
    print(f"# Wikipedia sample: {len(docs)} documents, {size:.1f} MB; one process, one core\n")

    rows = []
    for name in args.splitters.split(","):
        try:
            split = load_splitter(name)
        except UsageError as error:
            print(f"skipping {name}: {error}")
            continue
        sample = head(docs, args.slow_mb) if name in SLOW else docs
        sample_mb = sum(len(d.encode()) for d in sample) / 1e6
        golden = len(rules) - len(golden_rule_failures(split, rules))
        f1, f1_inner = ewt_f1(split, ewt)
        cpu, wall = speed(split, sample)
        rows.append((name, f"{golden}/{len(rules)}", f1, f1_inner, cpu, wall, sample_mb))

    print("| splitter | golden rules | EWT F1 | EWT F1 inner | MB/s | wall MB/s | sample MB |")
    print("|---|---|---|---|---|---|---|")
    for name, golden, f1, f1_inner, cpu, wall, sample_mb in rows:
        print(f"| {name} | {golden} | {f1:.3f} | {f1_inner:.3f} | {cpu:.2f} | {wall:.2f} | {sample_mb:.1f} |")
    ours = next((row for row in rows if row[0] == "default"), None)
    if ours:
        print()
        for name, *_, cpu, _wall, _mb in rows:
            if name != "default":
                print(f"default is {ours[4] / cpu:.1f}x the speed of {name} (CPU time)")

    if args.long_mb:
        print()
        long_line(long_docs, args.long_mb)

    ud_dir = args.shared / "sbd/ud"
    if ud_dir.exists():
        print("\n# Universal Dependencies dev sets: boundary F1, MB/s (CPU time), paragraph by paragraph\n")
        peers = [name for name in UD_PEERS if name in args.splitters.split(",") and _installed(name)]
        languages_table(ud_dir, peers)


def _installed(name: str) -> bool:
    try:
        get_splitter(name)
    except UsageError:
        return False
    return True


if __name__ == "__main__":
    main()
