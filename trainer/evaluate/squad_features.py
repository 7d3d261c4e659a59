"""Extractive question answering with BERT: questions on their contexts -> model inputs (windows) and
training labels; the model's start and end logits -> answer spans cut from the contexts.

Inputs are `[CLS] question [SEP] context window [SEP]`, as BERT's SQuAD recipe (Devlin et al. 2019, 4.2)
and Hugging Face's run_qa.py. A question is cut to its first MAX_QUESTION_PIECES word pieces (BERT's
max_query_length; at most half of `max_length`), counted. A context longer than the room left is read in
overlapping windows made by the fast tokenizer (`stride`): consecutive windows share `doc_stride` word pieces,
run_qa's meaning of the option (BERT's own run_squad.py meant the step between window starts instead). Each
context piece keeps its character offsets in the context, so a span of pieces maps back to the context's
own text. Training labels are the first answer's first and last piece in the window, or [CLS] (position 0)
for both when the window does not hold the whole answer or the question has none (v2.0), as both scripts do.

Decoding takes, over all of a question's windows, the span of context pieces with the highest start + end
logit, end >= start and at most `max_answer_length` pieces (30, BERT's), found exactly (each window's
pieces x lengths; run_qa and BERT search the 20 best starts x 20 best ends, which may miss it). Its text is
cut from the context by the character offsets. The null score (v2.0's "no answer") is [CLS]'s start + end
logit, the smallest over the windows, as both scripts take it; `null odds` = null score - best span score
(squad_metric turns them into answers with a threshold chosen on dev).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from corpusprep.errors import UsageError
from trainer.evaluate.squad import Question
from trainer.evaluate.tasks.base import Encoded, input_names

MAX_QUESTION_PIECES = 64  # BERT's max_query_length
MAX_ANSWER_LENGTH = 30  # word pieces: BERT's and run_qa's max_answer_length
DOC_STRIDE = 128  # word pieces shared by consecutive windows: run_qa's default, at max_length 384
CHUNK = 1000  # questions tokenised at a time (memory)
SPECIALS = 3  # [CLS], [SEP], [SEP]


def question_pieces(max_length: int) -> int:
    """The most word pieces a question keeps: BERT's 64, at most half of the input."""
    return min(MAX_QUESTION_PIECES, max_length // 2)


def default_doc_stride(max_length: int) -> int:
    """run_qa's 128 where it fits: at most half the smallest context window (after the longest question)."""
    return min(DOC_STRIDE, (max_length - SPECIALS - question_pieces(max_length)) // 2)


def check_windows(max_length: int, doc_stride: int | None, max_answer_length: int) -> int:
    """The doc stride to use (None: the default for `max_length`), or UsageError naming what cannot work."""
    room = max_length - SPECIALS - question_pieces(max_length)
    if room < 2:
        raise UsageError(f"max_length={max_length}: too short to hold a question and a context")
    stride = default_doc_stride(max_length) if doc_stride is None else doc_stride
    if not 0 <= stride < room:
        raise UsageError(f"doc_stride={stride}: the pieces consecutive windows share, 0 to {room - 1} at "
                         f"max_length {max_length} (a window holds {room} pieces of context after a "
                         f"{question_pieces(max_length)}-piece question)")
    if max_answer_length < 1:
        raise UsageError(f"max_answer_length={max_answer_length}: must be >= 1 word piece")
    return stride


@dataclass
class QAFeatures(Encoded):
    """Model inputs, one dict per window (`features`; `example`: each window's question, `truncated`: the
    questions cut to question_pieces), and what maps a window's logits back to its question's context."""

    context_start: list[int] = field(default_factory=list)  # per window: its first context piece's position
    offsets: list[np.ndarray] = field(default_factory=list)  # per window: (pieces, 2) character spans
    unreachable: int | None = None  # training: answers no window holds whole (labelled [CLS] throughout)
    max_answer_length: int = MAX_ANSWER_LENGTH  # the longest span decoding takes, in pieces

    def counts(self) -> dict[str, int]:
        found = super().counts()
        return found | ({"unreachable": self.unreachable} if self.unreachable is not None else {})


def encode(tokenizer, questions: list[Question], max_length: int, doc_stride: int, labels: bool,
           max_answer_length: int = MAX_ANSWER_LENGTH) -> QAFeatures:
    """Windows of every question (a fast tokenizer: its offsets are what map spans back); with `labels`,
    each window's start and end positions (training)."""
    keep = question_pieces(max_length)
    texts = [q.question.lstrip() for q in questions]  # leading blanks would only take room (run_qa)
    out = QAFeatures(unreachable=0 if labels else None, max_answer_length=max_answer_length)
    for first in range(0, len(questions), CHUNK):
        chunk = range(first, min(first + CHUNK, len(questions)))
        asked = tokenizer([texts[i] for i in chunk], add_special_tokens=False, return_offsets_mapping=True,
                          verbose=False)["offset_mapping"]
        for i, spans in zip(chunk, asked, strict=True):
            if len(spans) > keep:  # cut at a piece's end: the cut text is exactly those pieces again
                texts[i] = texts[i][: spans[keep - 1][1]]
                out.truncated += 1
        batch = tokenizer([texts[i] for i in chunk], [questions[i].context for i in chunk],
                          truncation="only_second", max_length=max_length, stride=doc_stride,
                          return_overflowing_tokens=True, return_offsets_mapping=True)
        reached: set[int] = set()
        for f, sample in enumerate(batch["overflow_to_sample_mapping"]):
            i = first + sample
            sequence = batch.sequence_ids(f)
            context = [k for k, s in enumerate(sequence) if s == 1]
            start = context[0] if context else len(sequence) - 1
            spans = batch["offset_mapping"][f]
            offsets = np.array([spans[k] for k in context], dtype=np.int64).reshape(-1, 2)
            feature = {key: batch[key][f] for key in input_names(tokenizer)}
            if labels:
                positions = answer_positions(questions[i], offsets, start)
                if positions != (0, 0):
                    reached.add(i)
                feature |= {"start_positions": positions[0], "end_positions": positions[1]}
            out.features.append(feature)
            out.example.append(i)
            out.context_start.append(start)
            out.offsets.append(offsets)
        if labels:
            out.unreachable += sum(1 for i in chunk if questions[i].answers and i not in reached)
    return out


def answer_positions(question: Question, offsets: np.ndarray, start: int) -> tuple[int, int]:
    """The first answer's first and last piece in a window whose context pieces (from position `start`)
    have these character spans; (0, 0), [CLS], when the window does not hold all of it or there is none."""
    if not question.answers or not len(offsets):
        return 0, 0
    answer = question.answers[0]
    if not (offsets[0, 0] <= answer.start and offsets[-1, 1] >= answer.end):
        return 0, 0
    first = bisect.bisect_right(offsets[:, 0].tolist(), answer.start) - 1  # the piece the answer starts in
    last = bisect.bisect_left(offsets[:, 1].tolist(), answer.end)  # the piece it ends in
    return start + first, start + last


# ---------------------------------------------------------------- decoding


@dataclass(frozen=True)
class Span:
    """A question's best span over its windows: characters [start, end) of its context, and its score."""

    start: int
    end: int
    score: float


def best_span(start_logits: np.ndarray, end_logits: np.ndarray, offsets: np.ndarray, context_start: int,
              max_answer_length: int) -> Span | None:
    """The window's span of context pieces with the highest start + end logit, end >= start, at most
    `max_answer_length` pieces (ties: the earliest start, then the shortest); None without context pieces."""
    n = len(offsets)
    if n == 0:
        return None
    limit = min(max_answer_length, n)  # no span is longer than its window: the work is bounded by it
    starts = np.asarray(start_logits[context_start : context_start + n], dtype=np.float64)
    ends = np.asarray(end_logits[context_start : context_start + n], dtype=np.float64)
    padded = np.concatenate([ends, np.full(limit - 1, -np.inf)])
    totals = starts[:, None] + np.lib.stride_tricks.sliding_window_view(padded, limit)
    first, extra = divmod(int(np.argmax(totals)), limit)  # totals[i, k]: pieces i .. i + k
    return Span(int(offsets[first, 0]), int(offsets[first + extra, 1]), float(totals[first, extra]))


def decode(questions: list[Question], features: QAFeatures, start_logits: list[np.ndarray],
           end_logits: list[np.ndarray]) -> tuple[dict, dict]:
    """Each question's best span text (over all its windows, at most `features.max_answer_length` pieces;
    "" when no window holds a context piece) and its null odds (null score - best span score: +inf without a
    span)."""
    best: list[Span | None] = [None] * len(questions)
    null = [math.inf] * len(questions)
    for f, i in enumerate(features.example):
        span = best_span(start_logits[f], end_logits[f], features.offsets[f], features.context_start[f],
                         features.max_answer_length)
        if span is not None and (best[i] is None or span.score > best[i].score):
            best[i] = span
        null[i] = min(null[i], float(start_logits[f][0]) + float(end_logits[f][0]))
    spans, odds = {}, {}
    for i, question in enumerate(questions):
        span = best[i]
        spans[question.id] = question.context[span.start : span.end] if span else ""
        odds[question.id] = null[i] - span.score if span else math.inf
    return spans, odds
