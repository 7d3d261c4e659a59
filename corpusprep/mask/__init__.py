"""Mask stage: pairs -> `[CLS] A [SEP] B [SEP]` examples with masked-LM corruption (vectorised numpy)."""

from corpusprep.mask.examples import Examples, concat_segments, examples_from_pairs
from corpusprep.mask.mlm import ACTIONS, Masked, MaskVocab, mask_examples, num_predictions

__all__ = [
    "ACTIONS", "Examples", "Masked", "MaskVocab", "concat_segments", "examples_from_pairs", "mask_examples",
    "num_predictions",
]
