"""Gopher's repetition rules for lines: at most 30% of lines repeat another line, holding at most 20% of the
characters (Rae et al. 2021, appendix A.1.1, table A1)."""

from collections import Counter

from corpusprep.curate.filters.base import KEEP, Doc, Filter, Verdict

MAX_LINES, MAX_CHARS = 0.30, 0.20


class RepeatedLines(Filter):
    def apply(self, doc: Doc) -> Verdict:
        counts = Counter(line.strip() for line in doc.lines)
        repeated = sum(n for n in counts.values() if n > 1)
        repeated_chars = sum(len(line) * n for line, n in counts.items() if n > 1)
        total_chars = sum(len(line) * n for line, n in counts.items())
        if repeated / max(len(doc.lines), 1) > MAX_LINES:
            return Verdict(f"{repeated} of {len(doc.lines)} lines repeated; at most {MAX_LINES:.0%}")
        if repeated_chars / max(total_chars, 1) > MAX_CHARS:
            return Verdict(f"repeated lines hold {repeated_chars / total_chars:.0%} of characters; at most "
                           f"{MAX_CHARS:.0%}")
        return KEEP


FILTER = RepeatedLines("repeated-lines", "Gopher (Rae et al. 2021, A.1.1, table A1)",
                       {"max_repeated_lines": MAX_LINES, "max_repeated_line_chars": MAX_CHARS})
