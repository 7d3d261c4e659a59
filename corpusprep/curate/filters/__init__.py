"""Quality filters: one module each, registered here by name, run only when `--filters` names them.

A filter is a `corpusprep.curate.filters.base.Filter`: it looks at one document and keeps it, keeps it with
lines taken out, or removes it with a reason (its name) and a detail for the report. Rules and thresholds are
the published ones, each module citing its source: Gopher's (Rae et al. 2021, appendix A.1.1) and C4's
boilerplate lines (Raffel et al. 2020, section 2.2).

This module is stdlib-only (the command line checks names at start-up). Adding a filter: a module with a
`FILTER` and one line in REGISTRY (docs/extension.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from corpusprep.errors import UsageError

if TYPE_CHECKING:
    from corpusprep.curate.filters.base import Filter

REGISTRY = {  # name -> module holding its FILTER
    "word-count": "corpusprep.curate.filters.word_count",
    "word-length": "corpusprep.curate.filters.word_length",
    "symbol-ratio": "corpusprep.curate.filters.symbol_ratio",
    "ellipsis-lines": "corpusprep.curate.filters.ellipsis_lines",
    "repeated-lines": "corpusprep.curate.filters.repeated_lines",
    "repeated-ngrams": "corpusprep.curate.filters.repeated_ngrams",
    "boilerplate-lines": "corpusprep.curate.filters.boilerplate_lines",
}
GOPHER = tuple(name for name in REGISTRY if name != "boilerplate-lines")  # `--filters gopher`: all of these


def check_names(names) -> tuple[str, ...]:
    """The filters named (any case; `gopher` stands for Gopher's rules, `all` for every filter), each once,
    in the order given; one line naming the choices for an unknown one."""
    out: list[str] = []
    for given in names:
        name = str(given).strip().lower()
        expanded = GOPHER if name == "gopher" else tuple(REGISTRY) if name == "all" else (name,)
        for one in expanded:
            if one not in REGISTRY:
                raise UsageError(f"--filters {given!r}: unknown filter; choose from gopher, all, "
                                 f"{', '.join(REGISTRY)}")
            if one not in out:
                out.append(one)
    return tuple(out)


def get(name: str) -> Filter:
    return importlib.import_module(REGISTRY[name]).FILTER
