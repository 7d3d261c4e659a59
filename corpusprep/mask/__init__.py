"""Mask stage: pairs or rows of pieces -> examples with masked-LM corruption (vectorised numpy)."""

from corpusprep.mask.examples import Examples, concat_segments, examples_from_pairs, examples_from_pieces
from corpusprep.mask.mlm import ACTIONS, Masked, MaskVocab, mask_examples, num_predictions

__all__ = [
    "ACTIONS", "Examples", "Masked", "MaskVocab", "concat_segments", "examples_from_pairs",
    "examples_from_pieces", "mask_examples", "num_predictions",
]
