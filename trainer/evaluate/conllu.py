"""CoNLL-U (Universal Dependencies) files -> tagged sentences, as UD specifies them."""

from __future__ import annotations

import re
from pathlib import Path

from corpusprep.errors import UsageError
from trainer.evaluate.data import MAX_WORDS, Sentences, Split

# 10 tab-separated fields; the tag columns a tagger can learn, by name (numbers 3-10 work too)
CONLLU_FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
CONLLU_LABELS = {"upos": 4, "xpos": 5, "feats": 6, "deprel": 8}
WORD_ID = re.compile(r"^[1-9][0-9]*$")
RANGE_ID = re.compile(r"^([1-9][0-9]*)-([1-9][0-9]*)$")  # a multiword token: its words follow
EMPTY_ID = re.compile(r"^(0|[1-9][0-9]*)\.[1-9][0-9]*$")  # an empty node (enhanced graphs only)


def label_field(column: str | None) -> int:
    """The CoNLL-U field (0-based) holding the tags: upos (default), xpos, feats, deprel or a number."""
    name = (column or "upos").lower()
    if name in CONLLU_LABELS:
        return CONLLU_LABELS[name] - 1
    if name.isdigit() and 2 < int(name) <= 10:
        return int(name) - 1
    raise UsageError(f"--label-column {column!r}: for CoNLL-U, one of {', '.join(CONLLU_LABELS)} or a "
                     "field number 3-10")


def read_conllu(path: Path, fmt: str, settings) -> Split:
    """Sentences of a CoNLL-U file, as UD specifies it: `#` comments (`# text = ...` included) are not
    words; a blank line ends a sentence; a multiword token `1-2` is a surface form whose words (1, 2)
    follow on their own lines and carry the tags, so its line is passed over; an empty node `1.1`
    (enhanced graphs) is no word of the sentence. Word ids must count 1, 2, 3 ... in each sentence; a
    sentence of more than MAX_WORDS words is a fault (never held whole)."""
    label = label_field(settings.label_column)
    sentence = Sentences(path, settings.on_error)
    for number, line in sentence.lines():
        if not line.strip():
            sentence.finish()
            continue
        if line.startswith("#") or sentence.void:
            continue
        cols = line.split("\t")
        problem = None
        if len(cols) != 10:
            problem = f"{len(cols)} tab-separated fields, CoNLL-U has 10"
        elif RANGE_ID.match(cols[0]) or EMPTY_ID.match(cols[0]):
            continue  # a multiword token's surface form, or an empty node: not a tagged word
        elif not WORD_ID.match(cols[0]):
            problem = f"word id {cols[0]!r} is not a number, a range (1-2) or an empty node (1.1)"
        elif int(cols[0]) != len(sentence.words) + 1:
            problem = f"word id {cols[0]} where {len(sentence.words) + 1} comes next"
        elif not cols[1]:
            problem = "empty word form"
        elif cols[label] in ("", "_"):
            problem = f"word {cols[1]!r} has no {CONLLU_FIELDS[label].upper()} ('{cols[label]}')"
        elif sentence.full:
            problem = f"a sentence of more than {MAX_WORDS:,} words"
        if problem is not None:
            sentence.fault(number, problem)
            continue
        sentence.add(cols[1], cols[label], number)
    return sentence.done(f"form -> {CONLLU_FIELDS[label]}")
