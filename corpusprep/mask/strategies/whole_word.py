"""`whole-word` (BERT's later release): as `token`, but a word's `##` pieces (with a word segmenter, a CJK
word's characters: corpusprep.mask.words) are chosen together and share one 80/10/10 decision (the
reference decides per piece: google-research/bert#910)."""

from __future__ import annotations

from corpusprep.mask.mlm import choose_words
from corpusprep.mask.strategies.base import Strategy


class WholeWord(Strategy):
    name, whole_words, exact_budget = "whole-word", True, False

    def choose(self, start, candidate, budget, rng):
        return choose_words(start, candidate, budget, rng, whole_words=True)


STRATEGY = WholeWord()
