"""Gopher: at most 30% of lines end in an ellipsis (Rae et al. 2021, appendix A.1.1)."""

from corpusprep.curate.filters.base import KEEP, Doc, Filter, Verdict

MAX_SHARE = 0.3


class EllipsisLines(Filter):
    def apply(self, doc: Doc) -> Verdict:
        ending = sum(line.rstrip().endswith(("...", "\u2026")) for line in doc.lines)
        share = ending / max(len(doc.lines), 1)
        return KEEP if share <= MAX_SHARE else Verdict(f"{share:.0%} of lines end in an ellipsis; at most "
                                                       f"{MAX_SHARE:.0%}")


FILTER = EllipsisLines("ellipsis-lines", "Gopher (Rae et al. 2021, A.1.1)", {"max_share": MAX_SHARE})
