"""What a bag-of-words model sees: word counts, and how alike two texts' count vectors are.

    cos(a, b) = (a · b) / (‖a‖ ‖b‖)

Two emails with the same words in a different order have cosine 1: to a model that only counts words,
they are the same email.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BagComparison:
    words: list[str]  # every word of either text, sorted
    counts_a: np.ndarray  # (V,)
    counts_b: np.ndarray  # (V,)
    cosine: float

    @property
    def only_in_a(self) -> list[str]:
        return [w for w, a, b in zip(self.words, self.counts_a, self.counts_b, strict=True) if a > b]

    @property
    def only_in_b(self) -> list[str]:
        return [w for w, a, b in zip(self.words, self.counts_a, self.counts_b, strict=True) if b > a]


def compare_bags(tokens_a: list[str], tokens_b: list[str]) -> BagComparison:
    bag_a, bag_b = Counter(tokens_a), Counter(tokens_b)
    words = sorted(set(bag_a) | set(bag_b))
    a = np.array([bag_a[w] for w in words], dtype=float)
    b = np.array([bag_b[w] for w in words], dtype=float)
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    cosine = float(a @ b / denom) if denom else 0.0
    return BagComparison(words, a, b, cosine)
