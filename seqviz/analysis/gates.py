"""Reading an LSTM gate trace: which units to look at, and what the forget gate says.

c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t: where f_t is near 1 the unit keeps its memory (and passes the gradient back
almost unchanged); near 0 it erases it. i_t decides how much of this word's candidate c̃_t is written in.
"""

from __future__ import annotations

import numpy as np

from seqviz.traces import LSTMGateTrace


def most_active_units(trace: LSTMGateTrace, count: int) -> list[int]:
    """The ``count`` units whose cell state moves most across the sentence (largest range), in unit order."""
    spread = trace.cell.max(axis=0) - trace.cell.min(axis=0)  # (H,)
    chosen = np.argsort(-spread, kind="stable")[: max(1, count)]
    return sorted(int(u) for u in chosen)


def forget_summary(trace: LSTMGateTrace) -> str:
    """One sentence on how much the units keep, from this trace's own numbers."""
    f = trace.forget_gate  # (T, H)
    keep = float((f > 0.9).mean())
    erase = float((f < 0.1).mean())
    words = trace.tokens
    overall = (f"Across all units and words, the forget gate is above 0.9 (keep almost everything) "
               f"{keep:.0%} of the time and below 0.1 (erase) {erase:.0%} of the time.")
    # At the first word the old cell c₀ is all zeros: f₁ multiplies nothing, so it says nothing about forgetting.
    if len(words) < 2:
        return overall + " With one word there is no earlier memory to forget."
    lowest = 1 + int(np.argmin(f[1:].mean(axis=1)))
    return (f"{overall} From the second word on (at the first there is no earlier memory), the word where the "
            f"units forget most on average is “{words[lowest]}” (position {lowest + 1}, mean f = "
            f"{f[lowest].mean():.2f}).")
