"""The chapter's worked attention example, computed step by step.

Given a query q and encoder states k_1 .. k_n (one per input word):

    (1) score_j = q · k_j                       similarity by dot product
    (2) α_j = e^{score_j} / Σ_i e^{score_i}     softmax: weights that add to 1
    (3) context = Σ_j α_j k_j                   the weighted average the decoder receives

With the chapter's q = (1, 0) and parcel (1, 0), never (0, 1), arrived (0.7, 0.7)
the weights are 0.474, 0.174, 0.351 and the context is (0.720, 0.420).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHAPTER_QUERY = (1.0, 0.0)
CHAPTER_WORDS = ("parcel", "never", "arrived")
CHAPTER_KEYS = ((1.0, 0.0), (0.0, 1.0), (0.7, 0.7))
SELF_TEST_QUERY = (0.0, 1.0)


@dataclass(frozen=True)
class WorkedAttention:
    words: tuple[str, ...]
    query: np.ndarray  # (d,)
    keys: np.ndarray  # (n, d)
    scores: np.ndarray  # (n,) q · k_j
    exp_scores: np.ndarray  # (n,) e^{score_j}
    weights: np.ndarray  # (n,) α_j, adding to 1
    context: np.ndarray  # (d,) Σ_j α_j k_j

    @property
    def focus(self) -> str:
        """The word that gets the largest weight."""
        return self.words[int(np.argmax(self.weights))]


def worked_attention(query, keys, words) -> WorkedAttention:
    q = np.asarray(query, dtype=float)  # (d,)
    k = np.asarray(keys, dtype=float)  # (n, d)
    if k.ndim != 2 or q.shape != (k.shape[1],) or len(words) != k.shape[0]:
        raise ValueError("need one query of d numbers and one key of d numbers per word")
    scores = k @ q  # (n,)
    # e^{score} as the chapter writes it; scores are bounded by VECTOR_RANGE, so no overflow.
    exp_scores = np.exp(scores)
    weights = exp_scores / exp_scores.sum()
    context = weights @ k  # (n,) @ (n, d) -> (d,)
    return WorkedAttention(tuple(words), q, k, scores, exp_scores, weights, context)


def number(value: float) -> str:
    """Three decimals as the chapter prints them; scientific notation once e^score gets huge."""
    return f"{value:.3f}" if abs(value) < 1e5 else f"{value:.3e}"


def describe_change(before: WorkedAttention, after: WorkedAttention) -> str:
    """One sentence saying how the weights moved between two queries over the same words."""
    delta = after.weights - before.weights
    if np.allclose(delta, 0, atol=5e-4):
        return "The weights do not change: both queries score every word the same way."
    gained, lost = int(np.argmax(delta)), int(np.argmin(delta))
    ctx = ", ".join(f"{v:.3f}" for v in after.context)

    def moved(j: int) -> str:
        return f"“{after.words[j]}” ({before.weights[j]:.3f} → {after.weights[j]:.3f})"

    return (f"The attention moves towards {moved(gained)} and away from {moved(lost)}, "
            f"so the context becomes ({ctx}), mostly “{after.focus}”.")
