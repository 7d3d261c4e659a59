"""Gopher: mean word length between 3 and 10 characters (Rae et al. 2021, appendix A.1.1)."""

from corpusprep.curate.filters.base import KEEP, Doc, Filter, Verdict

LOW, HIGH = 3.0, 10.0


class WordLength(Filter):
    def apply(self, doc: Doc) -> Verdict:
        if not doc.words:
            return Verdict("no words")
        mean = sum(map(len, doc.words)) / len(doc.words)
        return KEEP if LOW <= mean <= HIGH else Verdict(f"mean word length {mean:.1f}; {LOW:g} to {HIGH:g}")


FILTER = WordLength("word-length", "Gopher (Rae et al. 2021, A.1.1)", {"min_mean": LOW, "max_mean": HIGH})
