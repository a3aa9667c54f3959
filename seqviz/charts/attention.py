"""One decoder step of attention on the real model: each source word's score, then its softmax weight."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.base import position_labels, table
from seqviz.charts.colours import BLUE, GREY


def step_data(step, src_tokens: list[str]) -> pd.DataFrame:
    """One decoder step of additive attention: per source word, score, e^(score − max) and weight."""
    scores = np.asarray(step.scores, dtype=float)
    return pd.DataFrame({"source word": position_labels(src_tokens), "score": scores,
                         "e^(score − max)": np.exp(scores - scores.max()), "weight α": step.weights})


# How each attention part scores a source word (the decoder state s asks, the encoder state hⱼ answers).
SCORE_FORMULAS = {"additive": "vᵀ tanh(W s + U hⱼ)", "dot": "s · W_a hⱼ"}


def step_chart(family: str = "additive") -> alt.HConcatChart:
    """The chapter's steps ① and ② on the real model: scores, then the softmax weights (a template of
    ``step_data``; the page names the word being written)."""
    tooltip = [alt.Tooltip("source word:N"), alt.Tooltip("score:Q", format=".3f"),
               alt.Tooltip("weight α:Q", format=".3f")]
    y = alt.Y("source word:N", sort="ascending", title=None, axis=alt.Axis(labelOverlap=False, labelLimit=160))
    size = dict(height=alt.Step(18), width=220)
    scores = alt.Chart().mark_bar(color=GREY).encode(
        y=y, x=alt.X("score:Q", title=f"① score {SCORE_FORMULAS.get(family, '')}".rstrip()), tooltip=tooltip
    ).properties(**size)
    weights = alt.Chart().mark_bar(color=BLUE).encode(
        y=y, x=alt.X("weight α:Q", title="② softmax weight α", scale=alt.Scale(domain=[0, 1])), tooltip=tooltip
    ).properties(**size)
    return alt.hconcat(scores, weights, data=table())
