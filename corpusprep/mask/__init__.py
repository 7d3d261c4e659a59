"""Mask stage: pairs or rows of pieces -> examples with masked-LM corruption (vectorised numpy).

The names below are re-exported on first use (PEP 562), so that the light registry of masking strategies
(corpusprep.mask.strategies, read by the options and the CLI) imports no numpy.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    **dict.fromkeys(["Examples", "concat_segments", "examples_from_pairs", "examples_from_pieces"],
                    "corpusprep.mask.examples"),
    **dict.fromkeys(["ACTIONS", "Masked", "Masking", "MaskVocab", "mask_examples", "num_predictions"],
                    "corpusprep.mask.mlm"),
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'corpusprep.mask' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
