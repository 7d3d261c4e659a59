"""Gopher's repetition rules for n-grams (Rae et al. 2021, appendix A.1.1, table A1): the most frequent 2-, 3-
and 4-gram covers at most 20%, 18%, 16% of the characters of words; the words inside a repeated 5- to
10-gram at most 15% down to 10%. Characters are counted over words, as Gopher's rules are."""

from collections import Counter

from corpusprep.curate.filters.base import KEEP, Doc, Filter, Verdict

TOP = {2: 0.20, 3: 0.18, 4: 0.16}
DUPLICATED = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}


class RepeatedNgrams(Filter):
    def apply(self, doc: Doc) -> Verdict:
        words = doc.plain_words
        total = sum(map(len, words))
        if total == 0:
            return KEEP
        for n, limit in TOP.items():
            grams = Counter(tuple(words[i: i + n]) for i in range(len(words) - n + 1))
            if grams:
                gram, count = max(grams.items(), key=lambda item: (item[1], item[0]))
                share = count * sum(map(len, gram)) / total
                if count > 1 and share > limit:
                    return Verdict(f"top {n}-gram {' '.join(gram)!r} covers {share:.0%}; at most {limit:.0%}")
        for n, limit in DUPLICATED.items():
            starts = [i for i in range(len(words) - n + 1)]
            grams = Counter(tuple(words[i: i + n]) for i in starts)
            covered = [False] * len(words)
            for i in starts:
                if grams[tuple(words[i: i + n])] > 1:
                    covered[i: i + n] = [True] * n
            share = sum(len(w) for w, c in zip(words, covered, strict=True) if c) / total
            if share > limit:
                return Verdict(f"repeated {n}-grams cover {share:.0%}; at most {limit:.0%}")
        return KEEP


FILTER = RepeatedNgrams("repeated-ngrams", "Gopher (Rae et al. 2021, A.1.1, table A1)",
                        {"top_ngram_share": TOP, "duplicated_ngram_share": DUPLICATED})
