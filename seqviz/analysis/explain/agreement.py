"""Does attention rank the input words as another measure does? Four answers, per output row.

For one output (a translator's word y_t, a classifier's team ŷ), attention a_j and a measure m_j of every input
word j (signed measures ranked by their signed value: a word that supported the output ranks above one that was
in the way):

- Kendall's τ-b (:func:`kendall_tau`): concordant minus discordant pairs over the untied ones, from −1 (reversed)
  through 0 (unrelated) to 1 (the same order). Every pair of words counts the same, so when attention is peaked
  (one or two words take nearly all of it) the dozen near-zero weights at the bottom decide τ, and a τ near 0 or
  below can hide attention and the measure putting the same word first;
- weighted τ (:func:`weighted_tau`, scipy's ``weightedtau``: hyperbolic weights 1/(r + 1) on the rank r, averaged
  over the ranking by a and the ranking by m): a swap among the top words costs far more than one at the bottom;
- top-1 agreement: the two put the same word first;
- top-3 agreement: the two put the same three words (as a set) in their top 3.

Each is undefined (None, never NaN) where its ranking is: fewer words than it compares, a constant vector, a
NaN, or (top-k) a tie across the k-th place, which makes "the top k" a matter of how ties are broken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TOP_K = 3  # the "top 3" of top-3 agreement


def kendall_tau(a, b) -> float | None:
    """Kendall's τ-b between two vectors of scores (ties counted as τ-b does), by ``scipy.stats.kendalltau``.

    None where τ is undefined: fewer than 2 items, a constant vector, a NaN or infinite value.
    """
    a, b = _pair(a, b)
    if not _rankable(a, b):
        return None
    from scipy.stats import kendalltau  # imported on first use: scipy.stats takes seconds to import

    tau = float(kendalltau(a, b).statistic)
    return tau if np.isfinite(tau) else None


def kendall_tau_rows(a, b) -> list[float | None]:
    """:func:`kendall_tau` of every row pair of a and b (U, T), computed at once (the same numbers, to 1e-12).

    τ-b = Σ_{i≠j} sgn(a_i − a_j) sgn(b_i − b_j) / √(Σ_{i≠j} |sgn(a_i − a_j)| · Σ_{i≠j} |sgn(b_i − b_j)|): the
    concordant minus the discordant pairs over the pairs untied in a and in b. scipy takes about a millisecond
    a call; a held-out distribution needs tens of thousands.
    """
    a, b = _rows(a, b)
    finite = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)  # (U,)
    a, b = np.where(finite[:, None], a, 0.0), np.where(finite[:, None], b, 0.0)
    sa = np.sign(a[:, :, None] - a[:, None, :])  # (U, T, T)
    sb = np.sign(b[:, :, None] - b[:, None, :])  # (U, T, T)
    concordance = (sa * sb).sum(axis=(1, 2))  # (U,): 2 (concordant − discordant)
    untied = np.abs(sa).sum(axis=(1, 2)) * np.abs(sb).sum(axis=(1, 2))  # (U,)
    return [float(c / np.sqrt(n)) if ok and n > 0 else None
            for c, n, ok in zip(concordance, untied, finite, strict=True)]


def weighted_tau(a, b) -> float | None:
    """scipy's weighted τ (``scipy.stats.weightedtau`` with its defaults: hyperbolic weigher, ranks by a and by
    b averaged), which weighs agreement at the top of the rankings more; None where undefined."""
    a, b = _pair(a, b)
    if not _rankable(a, b):
        return None
    from scipy.stats import weightedtau

    # scipy's function itself, without its NaN-policy wrapper (3/4 of a call's time; a and b are finite here)
    tau = float(weightedtau.__wrapped__(a, b).statistic)
    return tau if np.isfinite(tau) else None


def top_k_agree(a, b, k: int) -> bool | None:
    """Whether a and b put the same k words (as a set) first; None where either's top k is not determined (k or
    fewer words, a NaN, or a tie between its k-th and (k+1)-th largest value)."""
    a, b = _pair(a, b)
    if a.size <= k or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return None
    tops = []
    for x in (a, b):
        order = np.argsort(-x, kind="stable")  # (T,) largest first
        if x[order[k - 1]] == x[order[k]]:
            return None
        tops.append(set(order[:k].tolist()))
    return tops[0] == tops[1]


@dataclass(frozen=True)
class Agreement:
    """Attention against one measure, one entry per output row (None where undefined)."""

    tau: list[float | None]  # Kendall's τ-b
    weighted_tau: list[float | None]  # scipy's weighted τ
    top1: list[bool | None]  # the same word first
    top3: list[bool | None]  # the same three words first

    def mean(self, statistic: str) -> float | None:
        """The mean over the rows where ``statistic`` is defined (a share, for top1 and top3); None if nowhere."""
        return mean_defined(getattr(self, statistic))

    def __add__(self, other: Agreement) -> Agreement:
        """Both lists of rows, one after the other (pooling outputs over sentences or emails)."""
        return Agreement(*(getattr(self, f) + getattr(other, f) for f in STATISTICS))


STATISTICS = ("tau", "weighted_tau", "top1", "top3")  # Agreement's fields, in the order the pages list them
NO_ROWS = Agreement([], [], [], [])


def agreement(attention, measure) -> Agreement:
    """:class:`Agreement` of every row of attention and measure (U, T)."""
    a, b = _rows(attention, measure)
    return Agreement(
        tau=kendall_tau_rows(a, b),
        weighted_tau=[weighted_tau(x, y) for x, y in zip(a, b, strict=True)],
        top1=[top_k_agree(x, y, 1) for x, y in zip(a, b, strict=True)],
        top3=[top_k_agree(x, y, TOP_K) for x, y in zip(a, b, strict=True)],
    )


def mean_defined(values: Sequence[float | bool | None]) -> float | None:
    """The mean of the defined values (True counts 1); None when none is."""
    defined = [float(v) for v in values if v is not None]
    return float(np.mean(defined)) if defined else None


def _rankable(a: np.ndarray, b: np.ndarray) -> bool:
    return a.size >= 2 and bool(np.isfinite(a).all() and np.isfinite(b).all()) and np.ptp(a) > 0 and np.ptp(b) > 0


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"two vectors of one length, not {a.size} and {b.size}")
    return a, b


def _rows(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"two matrices of one shape, not {a.shape} and {b.shape}")
    return a, b
