"""The pre-training objectives and masking strategies: one list, read by every stage from pairs to export.

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
"""

from __future__ import annotations

from dataclasses import dataclass

from corpusprep.errors import UsageError


@dataclass(frozen=True)
class Objective:
    name: str
    pairs_label: str | None  # bool column of the pairs files (None: no sentence task)
    shard_label: str | None  # uint8 column of the shards
    packs: bool  # rows of pieces (`none`) rather than sentence pairs
    paper: str


OBJECTIVES = {
    "nsp": Objective("nsp", "is_random_next", "next_sentence_label", False, "BERT (Devlin et al. 2019)"),
    "sop": Objective("sop", "is_swapped", "sentence_order_label", False, "ALBERT (Lan et al. 2020)"),
    "none": Objective("none", None, None, True, "RoBERTa (Liu et al. 2019)"),
}
DEFAULT_OBJECTIVE = "nsp"

# token: BERT; whole-word: BERT's later release (a word's pieces together); span: SpanBERT (Joshi et al. 2020)
MASK_STRATEGIES = ("token", "whole-word", "span")


def objective(name: str | None) -> Objective:
    """The objective of this name; None (manifests written before objectives existed) is `nsp`."""
    key = DEFAULT_OBJECTIVE if name is None else name
    if key not in OBJECTIVES:
        raise UsageError(f"unknown objective {name!r}: choose one of {', '.join(OBJECTIVES)}")
    return OBJECTIVES[key]
