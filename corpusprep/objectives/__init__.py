"""The pre-training objectives: one module each, registered here, read by every stage from pairs to export.

An objective fixes what a row is and which sentence task (if any) the trainer learns beside masked LM:

- `nsp` (BERT, Devlin et al. 2019): `[CLS] A [SEP] B [SEP]`, B the next segment or one from another
  document, 50/50; label 1 = NotNext.
- `sop` (ALBERT, Lan et al. 2020): `[CLS] A [SEP] B [SEP]`, A and B consecutive segments of one document,
  swapped in exactly half of the rows; label 1 = swapped.
- `none` (RoBERTa FULL-SENTENCES, Liu et al. 2019): masked LM only. A row holds one or more *pieces*, each
  whole consecutive sentences of one document laid out as `[CLS] piece [SEP]`; packed rows hold pieces of
  several documents, the shards record where each piece starts, and the trainer keeps attention (and
  position ids) inside each piece, so a packed row computes what its pieces would as separate rows.

The column names of the sentence label follow Hugging Face (`next_sentence_label` of BertForPreTraining,
`sentence_order_label` of AlbertForPreTraining).

This module is stdlib-only (the CLI and the records read it): an objective's module is imported on first use.
Adding an objective: a module with an `OBJECTIVE` (a `corpusprep.objectives.base.Objective`) and one line in
REGISTRY.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from corpusprep.errors import UsageError

if TYPE_CHECKING:
    from corpusprep.objectives.base import Objective

REGISTRY = {  # name -> module holding its OBJECTIVE
    "nsp": "corpusprep.objectives.nsp",
    "sop": "corpusprep.objectives.sop",
    "none": "corpusprep.objectives.none",
}
DEFAULT = "nsp"  # also the objective of pairs and shards written before objectives existed


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def objective(name: str | None) -> Objective:
    """The objective of this name (its module imported now); None (manifests written before objectives
    existed) is DEFAULT; UsageError naming the choices for an unknown name."""
    key = DEFAULT if name is None else name
    if key not in REGISTRY:
        raise UsageError(f"unknown objective {name!r}: choose one of {', '.join(REGISTRY)}")
    return importlib.import_module(REGISTRY[key]).OBJECTIVE
