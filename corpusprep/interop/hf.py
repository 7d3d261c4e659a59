"""Our shards as Hugging Face inputs: `datasets` loads them, this collator turns rows into model inputs.

    from datasets import load_dataset
    from corpusprep.interop.hf import PreTrainingCollator, data_files

    shards = load_dataset("parquet", data_files=data_files("SHARDS_DIR"))      # {"train", "validation"}
    collator = PreTrainingCollator.from_shards("SHARDS_DIR")                  # nsp=False: BertForMaskedLM
    args = TrainingArguments(..., remove_unused_columns=False)               # keep masked_lm_* for us
    Trainer(model=BertForPreTraining(config), args=args, train_dataset=shards["train"],
            data_collator=collator).train()

The shard columns follow Google's BERT (`masked_lm_positions`, `masked_lm_ids`, `next_sentence_label`, or
`sentence_order_label` for SOP); `BertForPreTraining` wants `labels` over every position (-100 where nothing
is predicted) and `next_sentence_label` (its 2-way head learns SOP's label as well); `BertForMaskedLM` wants
`labels` only. Packed rows (objective `none`) get `position_ids` restarting at each piece and an additive
[B, 1, L, L] attention mask (0 inside a piece, the float minimum elsewhere) that keeps attention inside
each piece: transformers' BERT uses a 4-D mask as given, eager or sdpa (tested with transformers 5).
Needs torch (not transformers or datasets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from corpusprep.engine.records import inside, load_record
from corpusprep.errors import UsageError
from corpusprep.objectives import objective

IGNORE_INDEX = -100  # transformers' cross-entropy skips labels equal to this
MASKED_LM_ALONE = dict(nsp=False)  # the collator's argument for BertForMaskedLM: no sentence label


def read_manifest(shards_dir: str | Path) -> dict:
    """The shards' manifest.json, checked against its schema (engine.records)."""
    path = Path(shards_dir) / "manifest.json"
    if not path.is_file():
        raise UsageError(f"{path}: missing (not a finished `corpusprep shard` output)")
    return load_record(path, "shards_manifest")


def data_files(shards_dir: str | Path) -> dict[str, list[str]]:
    """{split: [shard paths]} from the manifest, for `datasets.load_dataset("parquet", data_files=...)`."""
    directory = Path(shards_dir)
    splits = read_manifest(directory)["splits"]
    return {
        split: [str(inside(directory, s["path"])) for s in entry["shards"]]
        for split, entry in splits.items()
        if entry["shards"]
    }


@dataclass(frozen=True)
class PreTrainingCollator:
    """Shard rows (dicts, as `datasets` yields them) -> a padded batch of torch tensors for transformers.

    input_ids, token_type_ids, attention_mask: padded to the longest row, rounded up to `pad_to_multiple_of`;
    labels: the original token at each masked position, -100 everywhere else; next_sentence_label (0 = IsNext
    or in order, as transformers reads it) from `label_column` unless nsp=False (`BertForMaskedLM` takes no
    such argument); with `packed`, position_ids and a per-piece attention mask from `document_starts`.
    """

    pad_token_id: int
    pad_to_multiple_of: int = 8
    nsp: bool = True
    label_column: str = "next_sentence_label"
    packed: bool = False

    @classmethod
    def from_shards(cls, shards_dir: str | Path, **kwargs: Any) -> PreTrainingCollator:
        """The collator for a shard directory: [PAD]'s id and the objective's columns from its manifest."""
        manifest = read_manifest(shards_dir)
        spec = objective(manifest.get("objective"))
        defaults = {"nsp": not spec.packs, "label_column": spec.shard_label or "", "packed": spec.packs}
        for key, value in kwargs.items():  # masked LM alone suits any shards; no other change does
            if key in defaults and value != defaults[key] and {key: value} != MASKED_LM_ALONE:
                raise UsageError(f"{shards_dir}: {key}={value!r} contradicts these {spec.name} shards "
                                 f"(theirs: {defaults[key]!r})")
        return cls(pad_token_id=int(manifest["vocab"]["special_ids"]["[PAD]"]), **(defaults | kwargs))

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        multiple = max(self.pad_to_multiple_of, 1)
        longest = max(len(r["input_ids"]) for r in rows)
        length = -(-longest // multiple) * multiple
        ids = np.full((len(rows), length), self.pad_token_id, dtype=np.int64)
        types = np.zeros((len(rows), length), dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        labels = np.full((len(rows), length), IGNORE_INDEX, dtype=np.int64)
        for i, row in enumerate(rows):
            n = len(row["input_ids"])
            ids[i, :n] = row["input_ids"]
            types[i, :n] = row["token_type_ids"]
            mask[i, :n] = 1
            labels[i, np.asarray(row["masked_lm_positions"], dtype=np.int64)] = row["masked_lm_ids"]
        batch = {
            "input_ids": torch.from_numpy(ids),
            "token_type_ids": torch.from_numpy(types),
            "attention_mask": torch.from_numpy(mask),
            "labels": torch.from_numpy(labels),
        }
        if self.nsp:
            batch["next_sentence_label"] = torch.tensor([int(r[self.label_column]) for r in rows])
        if self.packed:
            piece = np.full((len(rows), length), -1, dtype=np.int64)  # piece number of each token
            positions = np.zeros((len(rows), length), dtype=np.int64)
            for i, row in enumerate(rows):
                n, starts = len(row["input_ids"]), np.asarray(row["document_starts"], dtype=np.int64)
                piece[i, :n] = np.searchsorted(starts, np.arange(n), side="right") - 1
                positions[i, :n] = np.arange(n) - starts[piece[i, :n]]
            same = (piece[:, :, None] == piece[:, None, :]) & (piece[:, None, :] >= 0)
            same |= np.eye(length, dtype=bool)[None]  # padded queries see themselves: no empty softmax row
            additive = np.where(same, 0.0, torch.finfo(torch.float32).min).astype(np.float32)
            batch["attention_mask"] = torch.from_numpy(additive[:, None])  # [B, 1, L, L]
            batch["position_ids"] = torch.from_numpy(positions)
        return batch
