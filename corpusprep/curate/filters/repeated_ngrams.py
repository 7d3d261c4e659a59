"""Gopher's repetition rules for n-grams (Rae et al. 2021, appendix A.1.1, table A1): the most frequent 2-, 3-
and 4-gram covers at most 20%, 18%, 16% of the characters of words; the words inside a repeated 5- to
10-gram at most 15% down to 10%. Characters are counted over words, as Gopher's rules are.

The n-grams are counted by their 64-bit hashes in numpy (curate/text.py, as the MinHash shingles): the same
verdicts as counting tuples of words (a collision: 2^-64 a pair; tests/curate/test_parts.py compares them),
4.8x faster on the Wikipedia corpus (BENCHMARKS.md, "Curate")."""

import numpy as np

from corpusprep.curate import text as txt
from corpusprep.curate.filters.base import KEEP, Doc, Filter, Verdict

TOP = {2: 0.20, 3: 0.18, 4: 0.16}
DUPLICATED = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}


class RepeatedNgrams(Filter):
    def apply(self, doc: Doc) -> Verdict:
        words = doc.plain_words
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        total = int(lengths.sum())
        if total == 0:
            return KEEP
        hashes = txt.word_hashes(words)
        for n, limit in TOP.items():
            grams = txt.ngram_hashes(hashes, n)
            if len(grams) < 2:
                continue
            _, first, counts = np.unique(grams, return_index=True, return_counts=True)
            count = int(counts.max())
            if count < 2:
                continue
            # the most frequent n-gram; a tie goes to the greatest words (as max over (count, words) would)
            gram = max(tuple(words[i: i + n]) for i in first[counts == count])
            share = count * sum(map(len, gram)) / total
            if share > limit:
                return Verdict(f"top {n}-gram {' '.join(gram)!r} covers {share:.0%}; at most {limit:.0%}")
        for n, limit in DUPLICATED.items():
            grams = txt.ngram_hashes(hashes, n)
            if len(grams) < 2:
                continue
            _, inverse, counts = np.unique(grams, return_inverse=True, return_counts=True)
            starts = np.flatnonzero(counts[inverse] > 1)
            cover = np.zeros(len(words) + 1, dtype=np.int64)  # +1 where a repeated n-gram starts, -1 after it
            np.add.at(cover, starts, 1)
            np.add.at(cover, starts + n, -1)
            share = int(lengths[np.cumsum(cover[:-1]) > 0].sum()) / total
            if share > limit:
                return Verdict(f"repeated {n}-grams cover {share:.0%}; at most {limit:.0%}")
        return KEEP


FILTER = RepeatedNgrams("repeated-ngrams", "Gopher (Rae et al. 2021, A.1.1, table A1)",
                        {"top_ngram_share": TOP, "duplicated_ngram_share": DUPLICATED})
