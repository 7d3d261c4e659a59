"""`corpusprep validate` of a vocab directory (engine.outputs' "vocab" kind)."""

from __future__ import annotations

from pathlib import Path

from corpusprep.engine.records import load_record
from corpusprep.errors import CorpusprepError, DataError, plural
from corpusprep.tokenize import VocabInfo
from corpusprep.validate import owned_problems, relative


def validate_vocab(directory: Path) -> tuple[list[str], str]:
    try:
        info = VocabInfo.load(directory)
        info.tokenizer()
    except (CorpusprepError, OSError, ValueError) as error:
        return [str(error)], ""
    try:
        load_record(directory / "vocab_report.json", "vocab_report")
        problems = []
    except (OSError, DataError) as error:
        problems = [relative(str(error), directory)]
    problems += owned_problems(directory, problems)
    return problems, f"{plural(info.size, 'token')}, sha256 {info.sha256[:12]}"
