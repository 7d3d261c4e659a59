"""What a masking strategy is: how it groups tokens into words and how it chooses words to predict."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class Strategy(ABC):
    name: str
    whole_words: bool  # a word's `##` pieces (and, with a segmenter, a CJK word's characters) go together
    exact_budget: bool  # every row gets exactly min(budget, candidates) predictions (`corpusprep validate`)

    @abstractmethod
    def choose(
        self, start: np.ndarray, candidate: np.ndarray, budget: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The words to predict, given the grids of word starts and candidates (`corpusprep.mask.mlm.
        word_starts`) and each row's budget: (flat bool over the grid marking each chosen word at its first
        token, flat int64 lengths in tokens of the chosen words there, or None when every word is one
        token). The chosen words get one 80/10/10 decision each."""
