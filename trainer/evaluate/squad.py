"""Extractive question answering data (the `qa` task kind, `tasks/qa.py`, which also writes predictions in
SQuAD's own format): SQuAD v1.1 and v2.0 JSON told, read and checked, and the cheap baselines. Pure Python:
no torch, no transformers.

    is_squad(path)                                           # auto: SQuAD's JSON, or JSON lines?
    split = read_squad("dev-v2.0.json", on_error="fail")   # SquadSplit: Questions, version, skips

A SQuAD file is `{"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}], "is_impossible", "plausible_answers"}]}]}]}`. v2.0 (`"version":
"v2.0"`, or `is_impossible` on a question of a file without a version) has unanswerable questions: no
answers. The file is read from disk, so untrusted: its size, each context, question and id and the number of
questions and answers are bounded; a question without an id, text or answer (v1.1), an answer that is not the
context's text at `answer_start`, or a span outside the context, is a fault: one line naming the file and
the question id (or its place, `data[3].paragraphs[0].qas[2]`, when it has no usable id), exit 1, or under
`on_error="skip"` the question left out and counted. A duplicate id is the same kind of fault (predictions
are keyed by id). A file that is not JSON, or not SQuAD's shape at the top, is always one line, exit 1.

Public copies the tests use when present (never committed; squad/README.md of bench/yardsticks.py's DATA):
SQuAD v1.1 dev, github.com/pulakdas1999/QnA_using_BERT @ 4892566, dev-v1.1.json.zip
(md5 3e85deb501d4e538b6bc56f786231552, torchtext's); the first 11 articles of v1.1 train,
github.com/ermeba/jupiter_bert @ b893930, train-v1.1.json (a copy cut at 1.28 MB); CS224N's half of v2.0
dev, github.com/chrischute/squad @ 85623ad, data/dev-v2.0.json; the official scripts,
github.com/rajpurkar/SQuAD-explorer @ eee5fdb, evaluate-v2.0.py, and github.com/tanmay1618/
Bi-DAF-Squad-Retrained @ 410e317, squad/evaluate-v1.1.py.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpusprep.engine import storage
from corpusprep.engine.records import parse_json
from corpusprep.errors import DataError, InputError
from corpusprep.read.streams import Unopenable, Unreadable, open_decompressed, read_blocks
from trainer.evaluate.data import Faults, Split
from trainer.evaluate.squad_metric import normalize

# Bounds on what a file may hold, far above SQuAD's (v2.0 train: 40 MB, 130,319 questions; v1.1 dev's longest
# context is 4,063 characters, its longest question 197). Beyond them it is no SQuAD file we can use.
MAX_FILE_BYTES = 512 * 2**20  # decompressed
MAX_QUESTIONS = 2_000_000
MAX_CONTEXT_CHARS = 100_000  # ~25,000 word pieces: ~200 windows of 128 at most per question
MAX_QUESTION_CHARS = 2_000
MAX_ID_CHARS = 200
MAX_ANSWERS = 100


@dataclass(frozen=True)
class Answer:
    text: str
    start: int  # its first character in the context

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True)
class Question:
    """One question on its context (a string its paragraph's questions share) and its gold answers: none
    for a v2.0 unanswerable question. Training uses the first answer, scoring all of them."""

    id: str
    question: str
    context: str
    answers: tuple[Answer, ...]

    @property
    def golds(self) -> list[str]:
        return [a.text for a in self.answers]


@dataclass
class SquadSplit(Split):
    version: str = "1.1"  # "1.1" | "2.0": the scoring rules (squad_metric) and whether "no answer" exists

    def golds(self) -> dict[str, list[str]]:
        """Question id -> gold answer texts, in the file's order ([]: unanswerable)."""
        return {q.id: q.golds for q in self.examples}


class QuestionFaults(Faults):
    """Faults placed by question id (or the question's place in the file) rather than by line."""

    def fault(self, reason: str, where: str, what: str) -> None:  # type: ignore[override]
        message = f"{self.path}: {where}: {what}"
        if self.on_error == "fail":
            raise DataError(f"{message} (--on-error skip leaves such input out, counted)")
        self.skips.add(reason, message)


# ---------------------------------------------------------------- reading


def read_bounded(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, decompressed (gz/xz/bz2/zst by their magic bytes); more than `limit`: one line."""
    if not storage.is_file(path):
        shown = storage.url(path)
        raise InputError(f"{shown}: no such file" if not storage.exists(path) else f"{shown}: not a file")
    blocks, size = [], 0
    try:
        with open_decompressed(path) as (stream, kind):
            for block in read_blocks(stream, path, kind):
                size += len(block)
                if size > limit:
                    raise DataError(f"{path}: more than {limit // 2**20} MiB (decompressed): no SQuAD file "
                                    "this reader takes")
                blocks.append(block)
    except Unopenable as error:
        raise InputError(str(error)) from None
    except Unreadable as error:
        raise DataError(str(error)) from None
    return b"".join(blocks)


SNIFF_BYTES = 1 << 16


def squad_shape(document: Any) -> bool:
    """SQuAD's shape at the top: an object with a "data" list of objects holding "paragraphs"."""
    articles = document.get("data") if isinstance(document, dict) else None
    return isinstance(articles, list) and bool(articles) and \
        all(isinstance(a, dict) and "paragraphs" in a for a in articles)


def is_squad(path: Path) -> bool:
    """Whether a `.json` file is SQuAD's JSON (`--format auto`; anything else is read as JSON lines). Its
    first SNIFF_BYTES must begin an object and name "paragraphs" (SQuAD's first article does within a few
    bytes; a JSON-lines file rarely does), and only then is the whole file parsed (bounded) and its shape
    checked: a JSON-lines file is never read whole here."""
    head = b""
    try:
        with open_decompressed(path) as (stream, kind):
            for block in read_blocks(stream, path, kind):
                head += block
                if len(head) >= SNIFF_BYTES:
                    break
    except (Unopenable, Unreadable):
        return False  # the reader of its format says what is wrong, in one line
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") or b'"paragraphs"' not in head:
        return False
    try:
        return squad_shape(parse_json(read_bounded(path), path))
    except (DataError, InputError):
        return False  # not one JSON document: JSON lines (whose reader names the line at fault)


def squad_version(document: dict, qas: list[dict]) -> str:
    """"2.0" for a file that says so (`"version": "v2.0"`) or, saying no version we know, marks a question
    `is_impossible`; else "1.1"."""
    said = str(document.get("version", "")).strip().lower().removeprefix("v")
    if said in ("1.0", "1.1", "2.0"):
        return "2.0" if said == "2.0" else "1.1"
    return "2.0" if any("is_impossible" in qa for qa in qas if isinstance(qa, dict)) else "1.1"


def read_squad(path: str | Path, on_error: str = "fail") -> SquadSplit:
    """The questions of a SQuAD v1.1 or v2.0 file, checked (see the module's docstring)."""
    path = Path(path)
    document = parse_json(read_bounded(path), path)
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise DataError(f'{path}: not a SQuAD file (no "data" list of articles at the top)')
    split = SquadSplit(str(path), [])
    faults = QuestionFaults(path, on_error, split.skips)
    placed = list(_paragraphs(document["data"], faults))
    count = sum(len(qas) for _, _, qas in placed)
    if count > MAX_QUESTIONS:
        raise DataError(f"{path}: {count:,} questions, more than the {MAX_QUESTIONS:,} this reader takes")
    split.version = squad_version(document, [qa for _, _, qas in placed for qa in qas])
    split.fields = f"SQuAD v{split.version}: question + context -> answer span"
    seen: set[str] = set()
    for where, context, qas in placed:
        for k, qa in enumerate(qas):
            question = _question(qa, f"{where}.qas[{k}]", context, split.version, faults)
            if question is None:
                continue
            if question.id in seen:
                faults.fault("duplicate_id", f"question {question.id!r}", "a second question with this id")
                continue
            seen.add(question.id)
            split.examples.append(question)
    return split


def _paragraphs(articles: list, faults: QuestionFaults) -> Any:
    """(place, context, qas) of each well-formed paragraph; a malformed article or paragraph is one fault."""
    for i, article in enumerate(articles):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            faults.fault("malformed_article", f"data[{i}]", 'an article is an object with "paragraphs"')
            continue
        for j, paragraph in enumerate(article["paragraphs"]):
            where = f"data[{i}].paragraphs[{j}]"
            problem = None
            if not isinstance(paragraph, dict):
                problem = 'a paragraph is an object with "context" and "qas"'
            elif not isinstance(paragraph.get("context"), str):
                problem = 'no "context" text'
            elif not isinstance(paragraph.get("qas"), list):
                problem = 'no "qas" list'
            elif len(paragraph["context"]) > MAX_CONTEXT_CHARS:
                problem = (f"a context of {len(paragraph['context']):,} characters, more than the "
                           f"{MAX_CONTEXT_CHARS:,} this reader takes")
            if problem is not None:
                faults.fault("malformed_paragraph", where, problem)
                continue
            yield where, paragraph["context"], paragraph["qas"]


def _question(qa: Any, where: str, context: str, version: str, faults: QuestionFaults) -> Question | None:
    """One question, checked; None (after its fault) when it cannot be used."""
    if not isinstance(qa, dict):
        faults.fault("malformed_question", where, 'a question is an object with "id", "question" and '
                     '"answers"')
        return None
    qid = qa.get("id")
    if not isinstance(qid, str) or not qid.strip() or len(qid) > MAX_ID_CHARS:
        shown = 'no "id" text' if not isinstance(qid, str) or not qid.strip() else \
            f"an id of {len(qid):,} characters (at most {MAX_ID_CHARS})"
        faults.fault("malformed_question", where, shown)
        return None
    text, answers, impossible = qa.get("question"), qa.get("answers"), qa.get("is_impossible", False)
    problem = None
    if not isinstance(text, str) or not text.strip():
        problem = "malformed_question", 'no "question" text'
    elif len(text) > MAX_QUESTION_CHARS:
        problem = "malformed_question", (f"a question of {len(text):,} characters (at most "
                                         f"{MAX_QUESTION_CHARS:,})")
    elif not isinstance(impossible, bool):
        problem = "malformed_question", '"is_impossible" is not true or false'
    elif not isinstance(answers, list) or len(answers) > MAX_ANSWERS:
        problem = "bad_answer", ('no "answers" list' if not isinstance(answers, list) else
                                 f"{len(answers):,} answers, more than {MAX_ANSWERS}")
    elif version == "1.1" and not answers:
        problem = "bad_answer", "no answer (in v1.1 every question has one; v2.0 has unanswerable ones)"
    elif impossible and answers:
        problem = "bad_answer", f'"is_impossible" with {len(answers)} answers'
    elif "is_impossible" in qa and not impossible and not answers:
        problem = "bad_answer", 'no answer, and not "is_impossible"'
    else:
        checked = [_answer(a, context) for a in answers]
        problem = next((("bad_answer", p) for p in checked if isinstance(p, str)), None)
    if problem is not None:
        faults.fault(problem[0], f"question {qid!r}", problem[1])
        return None
    return Question(qid, text, context, tuple(checked))


def _answer(answer: Any, context: str) -> Answer | str:
    """The answer, or what is wrong with it."""
    if not isinstance(answer, dict):
        return 'an answer is an object with "text" and "answer_start"'
    text, start = answer.get("text"), answer.get("answer_start")
    if not isinstance(text, str) or not text:
        return 'an answer without "text"'
    if not isinstance(start, int) or isinstance(start, bool):
        return f'answer {_shown(text)}: "answer_start" is not a whole number'
    if start < 0 or start + len(text) > len(context):
        return (f"answer {_shown(text)} at {start}:{start + len(text)} lies outside its context "
                f"({len(context):,} characters)")
    found = context[start : start + len(text)]
    if found != text:
        return f"answer {_shown(text)} does not match the context at answer_start {start} ({_shown(found)})"
    return Answer(text, start)


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


# ---------------------------------------------------------------- baselines


def first_words(context: str, n: int) -> str:
    """The context's first `n` whitespace-separated words, as the context writes them."""
    match = re.match(rf"\s*(\S+(?:\s+\S+){{0,{n - 1}}})", context)
    return match.group(1) if match else ""


def modal_answer_words(train: SquadSplit) -> int:
    """The most frequent length in words of the training answers (the first of each question; ties: the
    shorter); 1 when there are none."""
    lengths = Counter(len(normalize(q.answers[0].text).split()) or 1 for q in train.examples if q.answers)
    return max(sorted(lengths), key=lengths.__getitem__) if lengths else 1


def baseline_name(train: SquadSplit, version: str) -> str:
    if version == "2.0":
        return "empty answer"
    k = modal_answer_words(train)
    return f"the context's first {k} words" if k > 1 else "the context's first word"


def baseline(train: SquadSplit, split: SquadSplit) -> tuple[str, dict[str, str]]:
    """The cheap baseline's name and answers. v2.0: the empty answer (every question unanswerable: its
    score is the share of unanswerable questions). v1.1: the context's first k words, k the training
    answers' most frequent length in words (one word on SQuAD): a rule that reads neither the question nor
    the context's meaning, with the answers' usual length, so any score above it comes from reading."""
    if split.version == "2.0":
        return baseline_name(train, "2.0"), {q.id: "" for q in split.examples}
    k = modal_answer_words(train)
    return baseline_name(train, "1.1"), {q.id: first_words(q.context, k) for q in split.examples}
