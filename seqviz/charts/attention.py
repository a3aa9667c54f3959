"""One decoder step of attention on the real model: each source word's score, then its softmax weight."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.base import has_phone_form, phone_title, position_labels, side_by_side, table
from seqviz.charts.colours import BLUE, GREY
from seqviz.charts.figure import Figure, drawn, figure


def step_data(step, src_tokens: list[str]) -> pd.DataFrame:
    """One decoder step of additive attention: per source word, score, e^(score − max) and weight."""
    scores = np.asarray(step.scores, dtype=float)
    return pd.DataFrame({"source word": position_labels(src_tokens), "score": scores,
                         "e^(score − max)": np.exp(scores - scores.max()), "weight α": step.weights})


# An attention part's score rule (seqviz.models.attention) as an axis prints it: score_j -> scoreⱼ, s_{t-1} -> sₜ₋₁.
_SUBSCRIPTS = (("_{t-1}", "ₜ₋₁"), ("_t", "ₜ"), ("_j", "ⱼ"), ("_a", "ₐ"))


def score_title(score_rule: str | None) -> str:
    """The score axis's title: ① and the part's own score rule in subscripts."""
    rule = score_rule or ""
    for written, printed in _SUBSCRIPTS:
        rule = rule.replace(written, printed)
    return f"① {rule}" if rule else "① score"


@has_phone_form
def step_chart(score_rule: str | None = None, phone: bool = False) -> alt.HConcatChart | alt.VConcatChart:
    """The chapter's steps ① and ② on the real model: scores, then the softmax weights (a template of
    ``step_data``; the page names the word being written). ``score_rule``: the attention part's, from the trace.
    ``phone``: both panels narrowed to a phone's column, the words once on the left."""
    tooltip = [alt.Tooltip("source word:N"), alt.Tooltip("score:Q", format=".3f"),
               alt.Tooltip("weight α:Q", format=".3f")]
    axes = [("score:Q", score_title(score_rule), GREY, alt.Undefined), ("weight α:Q", "② softmax weight α", BLUE,
                                                                         alt.Scale(domain=[0, 1]))]

    def panel(number, words, x_axis, width):
        field, title, colour, scale = axes[number]
        return alt.Chart().mark_bar(color=colour).encode(
            y=alt.Y("source word:N", sort="ascending", title=None, axis=alt.Axis(**words) if words else None),
            x=alt.X(field, title=phone_title(title, width) if phone else title, scale=scale,
                    axis=alt.Axis(**x_axis) if x_axis else alt.Undefined),
            tooltip=tooltip).properties(height=alt.Step(18), width=width)

    return side_by_side(panel, len(axes), 220, phone, words_each=True, spacing=None).properties(data=table())


@figure("attention-step")
def attention_step(step, src_tokens: list[str], score_rule: str | None = None) -> Figure:
    """One decoder step: ① each source word's score, ② its softmax weight (titled with the score's rule)."""
    return drawn(step_chart, step_data(step, src_tokens), score_rule)
