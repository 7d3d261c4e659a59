"""Evaluation files -> the texts a corpus must not contain (`EvalExample`s), for decontamination.

A file is told and read as `trainer.evaluate` tells and reads it, so that curate reads what fine-tuning reads,
with the same bounds and faults: its format by `readers.format_of` (the name, else the first lines; a .json
file by its content: SQuAD's JSON, else JSON lines), then the reader of that format (`readers.read_split`):
- CoNLL-style columns (`columns.read_columns`: CoNLL-2003 with `-DOCSTART-`, IOB2 with `#` comments and an
  index column): each sentence's words, joined by spaces. Read as for the `tag` task (any tag but an empty
  one): tags are no text to match.
- Tables (`tables.read_table`: GLUE-style TSV, CSV, JSONL): each text of a row, both of a pair; a file without
  a label column (a GLUE test file) too: labels are no text to match. A .tsv file in a directory named CoLA
  has no header and GLUE's CoLA columns, as `--glue DIR` reads it (`glue.cola_columns`).
- SQuAD v1.1 and v2.0 JSON (`squad.read_squad`, bounded and validated): each question and each context (once).
  Not the answers: the reader checks that each is its context's text at `answer_start`, so a 13-word answer
  has no n-gram its context lacks, and a shorter one matched whole would remove a document for an 8-word
  fragment of a context, which decontamination keeps. NeMo Curator matches SQuAD's questions only; the
  contexts are Wikipedia paragraphs, which a Wikipedia corpus holds and a model would have read.
- CoNLL-U is read here, over trainer.evaluate's line reading (`data.read_lines`: decompression, the line
  bound, faults) and its word-id patterns, for one reason: the surface text. trainer.evaluate's reader gives a
  sentence's syntactic words, which split contractions ("don't" -> "do n't", "du" -> "de le") as no corpus
  writes them; a sentence's `# text =` (which UD requires), else its surface tokens (a multiword token's
  form, not its words), is what a corpus holds.

Bad input is trainer.evaluate's: one line naming the file and line (or question), exit 1; with
`--on-error skip` the sentence, row or question is left out and counted (`--on-error auto`, the default,
fails: an example left out is one the corpus is not checked against). A file whose format or columns cannot be
told is one line too: curate has no options to name them.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from corpusprep.engine import records, storage
from corpusprep.errors import DataError, InputError, UsageError
from corpusprep.read.document import ReadStats
from trainer.evaluate import glue, readers, tables
from trainer.evaluate.conllu import EMPTY_ID, RANGE_ID, WORD_ID
from trainer.evaluate.data import MAX_WORDS, Faults, Row, Sentence, Skips, Split, read_lines


@dataclass(frozen=True)
class EvalExample:
    file: str  # as given
    position: str  # "line 12", "question '56be4db0acb8001400a502ec'"
    text: str


@dataclass(frozen=True)
class _Settings:
    """What trainer.evaluate's readers ask of their settings: no column named (each is found as fine-tuning
    finds it), the `tag` task's checks (any tag but an empty one) and the on-error policy."""

    on_error: str = "fail"
    text_column: str | None = None
    pair_column: str | None = None
    label_column: str | None = None
    header: bool = True
    task: str = "tag"


def read_examples(path: str, on_error: str = "auto", skips: Skips | None = None) -> list[EvalExample]:
    """Every text of one evaluation file, in file order. `on_error` is the corpus's `--on-error`: `skip`
    leaves out a malformed sentence, row or question, counted in `skips`; anything else fails."""
    file = Path(path)
    if not storage.is_file(file):
        what = "no such file" if not storage.exists(file) else "not a file"
        raise InputError(f"--decontaminate {storage.url(file)}: {what}")
    settings = _Settings(on_error="skip" if on_error == "skip" else "fail")
    try:
        fmt = readers.format_of(file, "auto")
        split = _conllu(file, path, settings) if fmt == "conllu" else _split(file, fmt, settings)
    except UsageError as error:  # its advice names trainer.evaluate's options (--format, --text-column ...)
        raise UsageError(f"--decontaminate {str(error).split('; ')[0]}: curate tells an evaluation file's "
                         "format and columns as trainer.evaluate does, with no option to name them") from None
    if skips is not None:
        skips.counts.update(split.skips.counts)
        skips.examples.extend(split.skips.examples[: 5 - len(skips.examples)])
    return list(_examples(split, path))


def _split(file: Path, fmt: str, settings: _Settings) -> Split:
    if fmt == "tsv" and file.parent.name.lower() == "cola":  # no header: read as `--glue DIR` reads CoLA
        settings = dataclasses.replace(settings, **glue.cola_columns(file))
    try:
        return readers.read_split(file, fmt, settings)
    except UsageError as error:
        if fmt not in ("tsv", "csv", "jsonl") or "no label column" not in str(error):
            raise
        # a table without labels (a GLUE test file): its text column stands in for them
        stand_in = dataclasses.replace(settings, label_column=_text_column(file, fmt))
        return readers.read_split(file, fmt, stand_in)


def _text_column(file: Path, fmt: str) -> str:
    """The column trainer.evaluate recognises as the text, to stand in for a missing label column."""
    for _, line in read_lines(file, ReadStats()):
        if line is not None and line.strip():
            header = (list(records.parse_json(line, file)) if fmt == "jsonl"
                      else next(csv.reader([line], delimiter="\t" if fmt == "tsv" else ",")))
            columns = tables.choose_columns(header, file, None, None, header[0] if header else "1")
            return str(columns.text)
    raise DataError(f"{file}: no rows")


def _examples(split: Split, shown: str) -> Iterator[EvalExample]:
    """A split's texts: a sentence's words, a row's texts, a SQuAD question and (once) its context."""
    contexts: set[str] = set()
    for example in split.examples:
        if isinstance(example, Sentence):
            yield EvalExample(shown, f"line {example.lines[0]}", " ".join(example.words))
        elif isinstance(example, Row):
            yield from (EvalExample(shown, f"line {example.line}", text)
                        for text in (example.text, example.text_b) if text)
        elif isinstance(example, EvalExample):  # a CoNLL-U sentence's surface text (_conllu)
            yield example
        else:  # a SQuAD question
            if example.context not in contexts:
                contexts.add(example.context)
                yield EvalExample(shown, f"context of question {example.id!r}", example.context)
            yield EvalExample(shown, f"question {example.id!r}", example.question)


def _conllu(file: Path, shown: str, settings: _Settings) -> Split:
    """The surface text of each sentence of a CoNLL-U file (see the module's docstring): its `# text =`, else
    its surface tokens. A token line without 10 fields or with no word id, a range (1-2) or an empty node
    (1.1), or a sentence of more than MAX_WORDS tokens, is a fault: the sentence is left out whole under
    skip. Its tags are not read (a file without them is still text to match)."""
    split = Split(str(file), [])
    faults = Faults(file, settings.on_error, split.skips)
    surface: list[str] = []
    text, start, last, void = None, 0, 0, False  # last: the last word of the open multiword token
    lines = read_lines(file, ReadStats(), faults)
    for number, line in itertools.chain(lines, [(0, "")]):  # a blank line after the last ends its sentence
        if line is not None and not line.strip():
            if not void and (text or surface):
                split.examples.append(EvalExample(shown, f"line {start}", text or " ".join(surface)))
            surface, text, start, last, void = [], None, 0, 0, False
            continue
        start = start or number
        problem = None
        if line is None:  # over the line bound: a fault already
            void = True
        elif line.startswith("#"):
            text = line.partition("=")[2].strip() if line.startswith("# text =") else text
        elif void:
            continue
        elif len(cols := line.split("\t")) != 10:
            problem = f"{len(cols)} tab-separated fields, CoNLL-U has 10"
        elif span := RANGE_ID.match(cols[0]):  # a multiword token: its form is the surface, its words follow
            surface.append(cols[1])
            last = int(span.group(2))
        elif WORD_ID.match(cols[0]):
            if int(cols[0]) > last:
                surface.append(cols[1])
        elif not EMPTY_ID.match(cols[0]):  # an empty node (enhanced graphs) is no surface token
            problem = f"word id {cols[0]!r} is not a number, a range (1-2) or an empty node (1.1)"
        if problem is None and len(surface) > MAX_WORDS:
            problem = f"a sentence of more than {MAX_WORDS:,} words"
        if problem is not None:
            faults.fault("malformed_line", number, problem)
            surface, void = [], True
    return split
