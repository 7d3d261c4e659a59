"""`token` (BERT): every token is its own word; words are visited in random order and taken while they fit the
budget (one that would overshoot is skipped, as in Google's create_pretraining_data.py)."""

from __future__ import annotations

from corpusprep.mask.mlm import choose_words
from corpusprep.mask.strategies.base import Strategy


class Token(Strategy):
    name, whole_words, exact_budget = "token", False, True

    def choose(self, start, candidate, budget, rng):
        return choose_words(start, candidate, budget, rng, whole_words=False)


STRATEGY = Token()
