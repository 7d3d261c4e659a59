"""Gopher: between 50 and 100,000 words (Rae et al. 2021, appendix A.1.1)."""

from corpusprep.curate.filters.base import KEEP, Doc, Filter, Verdict

LOW, HIGH = 50, 100_000


class WordCount(Filter):
    def apply(self, doc: Doc) -> Verdict:
        n = len(doc.words)
        if n < LOW:
            return Verdict(f"{n} words; at least {LOW}")
        return Verdict(f"{n:,} words; at most {HIGH:,}") if n > HIGH else KEEP


FILTER = WordCount("word-count", "Gopher (Rae et al. 2021, A.1.1)", {"min_words": LOW, "max_words": HIGH})
