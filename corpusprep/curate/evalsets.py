"""Evaluation files -> the texts a corpus must not contain (`EvalExample`s), for decontamination.

Tables (GLUE-style TSV, CSV, JSONL) are read by trainer.evaluate's own reader (`read_table`: the columns
recognised from the header as fine-tuning recognises them; each text of a pair is an example). CoNLL-U is read
line by line with trainer.evaluate's `read_lines` for its sentences' surface text (`# text =`, which UD
requires; else the surface tokens): the tagging reader's syntactic words split contractions ("don't" ->
"do n't", "du" -> "de le"), which no corpus holds. CoNLL-style NER columns and SQuAD JSON have minimal readers
here, TO BE REPLACED by trainer.evaluate's readers once they are merged (engineers `yardsticks` and `squad`
are adding them).

A file's format comes from its name (.conllu, .tsv, .csv, .jsonl; .json: SQuAD when it is one JSON object
with a `data` list, else JSONL), else from its first line (ten tab-separated fields: CoNLL-U; otherwise NER
columns). Bad input is one line naming the file and line (exit 1), or with `on_error = skip` counted.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from corpusprep.engine import records, storage
from corpusprep.errors import DataError, InputError, UsageError
from corpusprep.read.document import ReadStats
from corpusprep.read.streams import COMPRESSION_SUFFIXES, Unopenable, Unreadable, open_decompressed
from trainer.evaluate import data as evaldata
from trainer.evaluate import tables

TABLE_SUFFIXES = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True)
class EvalExample:
    file: str  # as given
    position: str  # "line 12", "data[0].paragraphs[3].qas[1]"
    text: str


@dataclass(frozen=True)
class _TableSettings:
    """What trainer.evaluate's `read_table` asks of its settings; the label column only makes it read a
    file without labels (a GLUE test file) too: labels are no text to match."""

    text_column: str | None = None
    pair_column: str | None = None
    label_column: str | None = None
    header: bool = True
    on_error: str = "skip"


def read_examples(path: str) -> list[EvalExample]:
    """Every text of one evaluation file, in file order."""
    file = Path(path)
    if not storage.is_file(file):
        what = "no such file" if not storage.exists(file) else "not a file"
        raise InputError(f"--decontaminate {storage.url(file)}: {what}")
    fmt = _format(file)
    reader = {"conllu": _conllu, "ner": _ner, "squad": _squad}.get(fmt, _table)
    return reader(file, path) if reader is not _table else _table(file, path, fmt)


def _format(file: Path) -> str:
    name = file.name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        name = name.removesuffix(suffix)
    suffix = Path(name).suffix
    if suffix in TABLE_SUFFIXES:
        return TABLE_SUFFIXES[suffix]
    if suffix == ".conllu":
        return "conllu"
    first = next((line for _, line in evaldata.read_lines(file, ReadStats())
                  if line.strip() and not line.startswith("#")), "")  # fmt: skip
    if suffix == ".json":
        return "squad" if first.lstrip().startswith("{") and not first.rstrip().endswith("}") else "jsonl"
    return "conllu" if len(first.split("\t")) == 10 else "ner"


def _table(file: Path, shown: str, fmt: str) -> list[EvalExample]:
    try:
        split = tables.read_table(file, fmt, _TableSettings())
    except UsageError as error:
        if "no label column" not in str(error):
            raise
        split = tables.read_table(file, fmt, _TableSettings(label_column=_text_column(file, fmt)))
    return [EvalExample(shown, f"line {row.line}", text) for row in split.examples
            for text in (row.text, row.text_b) if text]  # fmt: skip


def _text_column(file: Path, fmt: str) -> str:
    """The column trainer.evaluate recognises as the text, to stand in for a missing label column."""
    for _, line in evaldata.read_lines(file, ReadStats()):
        if line.strip():
            header = (list(records.parse_json(line, file)) if fmt == "jsonl"
                      else next(csv.reader([line], delimiter="\t" if fmt == "tsv" else ",")))
            columns = tables.choose_columns(header, file, None, None, header[0] if header else "1")
            return str(columns.text)
    raise DataError(f"{file}: no rows")


def _conllu(file: Path, shown: str) -> list[EvalExample]:
    examples, surface, text, start, skip_to = [], [], None, 0, 0

    def finish() -> None:
        sentence = text if text is not None else " ".join(surface)
        if sentence.strip():
            examples.append(EvalExample(shown, f"line {start}", sentence))

    for number, line in evaldata.read_lines(file, ReadStats()):
        if not line.strip():
            if text is not None or surface:
                finish()
            surface, text, skip_to = [], None, 0
            continue
        start = start if (text is not None or surface) else number
        if line.startswith("# text ="):
            text = line.partition("=")[2].strip()
        elif not line.startswith("#"):
            cols = line.split("\t")
            if len(cols) != 10:
                raise DataError(f"{file}:{number}: {len(cols)} tab-separated fields, CoNLL-U has 10")
            token_id = cols[0]
            if "-" in token_id:  # a multiword token: its form is the surface, its words follow
                surface.append(cols[1])
                skip_to = int(token_id.partition("-")[2]) if token_id.partition("-")[2].isdigit() else 0
            elif "." not in token_id and not (token_id.isdigit() and int(token_id) <= skip_to):
                surface.append(cols[1])
    if text is not None or surface:
        finish()
    return examples


def _ner(file: Path, shown: str) -> list[EvalExample]:
    """CoNLL-2003 style: a token a line, its first whitespace-separated column; a blank line (or
    -DOCSTART-) between sentences. Minimal: to be replaced by trainer.evaluate's reader once merged."""
    examples, tokens, start = [], [], 0
    for number, line in evaldata.read_lines(file, ReadStats()):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if tokens:
                examples.append(EvalExample(shown, f"line {start}", " ".join(tokens)))
            tokens = []
            continue
        if not tokens:
            start = number
        tokens.append(fields[0])
    if tokens:
        examples.append(EvalExample(shown, f"line {start}", " ".join(tokens)))
    return examples


def _squad(file: Path, shown: str) -> list[EvalExample]:
    """SQuAD v1.1/v2.0 JSON: each paragraph's context and each question. Minimal: to be replaced by
    trainer.evaluate's reader once merged."""
    try:
        with open_decompressed(file) as (stream, _):
            raw = stream.read(records.MAX_BYTES + 1)
    except (Unopenable, Unreadable) as error:
        raise DataError(str(error)) from None
    if len(raw) > records.MAX_BYTES:
        raise DataError(f"{file}: more than {records.MAX_BYTES:,} bytes of JSON")
    document = records.parse_json(raw, file)
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise DataError(f"{file}: not SQuAD JSON (no \"data\" list)")
    examples = []
    for i, article in enumerate(data):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        for j, paragraph in enumerate(paragraphs if isinstance(paragraphs, list) else []):
            if not isinstance(paragraph, dict):
                continue
            where = f"data[{i}].paragraphs[{j}]"
            if isinstance(paragraph.get("context"), str):
                examples.append(EvalExample(shown, f"{where}.context", paragraph["context"]))
            qas = paragraph.get("qas")
            for k, qa in enumerate(qas if isinstance(qas, list) else []):
                if isinstance(qa, dict) and isinstance(qa.get("question"), str):
                    examples.append(EvalExample(shown, f"{where}.qas[{k}]", qa["question"]))
    if not examples:
        raise DataError(f"{file}: SQuAD JSON without a context or question")
    return examples
