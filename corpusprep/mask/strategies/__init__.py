"""The masking strategies of `corpusprep shard`: one module each, registered here.

A strategy says which positions of a row are chosen for prediction (`Strategy.choose`); everything else (the
budget, the 80/10/10 corruption, the layout of predictions) is `corpusprep.mask.mlm`'s and the same for all.
This module is stdlib-only (the CLI and the options dataclasses read it): a strategy's module is imported on
first use. Adding a strategy: a module with a `STRATEGY` (a `corpusprep.mask.strategies.base.Strategy`) and
one line in REGISTRY.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from corpusprep.errors import UsageError

if TYPE_CHECKING:
    from corpusprep.mask.strategies.base import Strategy

# name -> module holding its STRATEGY; the first is the default (the order of --help and of the benchmarks)
REGISTRY = {
    "token": "corpusprep.mask.strategies.token",  # BERT
    "whole-word": "corpusprep.mask.strategies.whole_word",  # BERT's later release
    "span": "corpusprep.mask.strategies.span",  # SpanBERT (Joshi et al. 2020)
}
DEFAULT = "token"
WHOLE_WORD_ALIAS = "whole-word"  # what the option `whole_word_mask` (older manifests and CLIs) means


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(name: str) -> Strategy:
    """The strategy of this name (its module imported now); UsageError for an unknown name."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise UsageError(f"unknown mask strategy {name!r}: choose one of {', '.join(REGISTRY)}")
    return importlib.import_module(REGISTRY[name]).STRATEGY


def resolve(options: Mapping[str, Any]) -> str:
    """The strategy named by shard options or a shards manifest's options: `mask_strategy`, or its older alias
    `whole_word_mask` (manifests from before strategies have only that), else DEFAULT. UsageError for an
    unknown name or a contradiction."""
    name, alias = options.get("mask_strategy"), options.get("whole_word_mask")
    if name is not None and (not isinstance(name, str) or name not in REGISTRY):
        raise UsageError(f"--mask-strategy must be one of {', '.join(REGISTRY)}, not {name!r}")
    if alias and name not in (None, WHOLE_WORD_ALIAS):
        raise UsageError(f"--whole-word-mask means --mask-strategy {WHOLE_WORD_ALIAS}: it contradicts "
                         f"--mask-strategy {name} (give one of them)")
    return WHOLE_WORD_ALIAS if alias else name or DEFAULT
