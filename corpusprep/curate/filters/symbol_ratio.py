"""Gopher: at most 0.1 hash symbols or ellipses per word (Rae et al. 2021, appendix A.1.1)."""

from corpusprep.curate.filters.base import KEEP, Doc, Filter, Verdict

MAX_RATIO = 0.1


class SymbolRatio(Filter):
    def apply(self, doc: Doc) -> Verdict:
        symbols = doc.text.count("#") + doc.text.count("...") + doc.text.count("\u2026")
        ratio = symbols / max(len(doc.words), 1)
        return KEEP if ratio <= MAX_RATIO else Verdict(f"{ratio:.2f} symbols (#, ...) per word; at most "
                                                       f"{MAX_RATIO}")


FILTER = SymbolRatio("symbol-ratio", "Gopher (Rae et al. 2021, A.1.1)", {"max_symbols_per_word": MAX_RATIO})
