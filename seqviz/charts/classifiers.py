"""The email classifiers on the visitor's sentence: each model's probabilities, and what a bag of words sees."""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts.base import MODEL_LABEL_PX, table
from seqviz.charts.colours import BLUE, GREEN, ORANGE, PURPLE
from seqviz.charts.figure import Figure, drawn, figure


def probabilities_data(traces: dict) -> pd.DataFrame:
    """One row per (model, class) from {model name: ClassifierTrace}."""
    rows = []
    for model, trace in traces.items():
        for label, p in zip(trace.labels, trace.probs, strict=True):
            rows.append({"model": model, "class": label, "probability": float(p),
                         "predicted": label == trace.predicted})
    return pd.DataFrame(rows)


def probabilities_chart(models: tuple[str, ...], title: str = "") -> alt.Chart:
    """Each model's probability of each team, one stacked bar per model (a template of ``probabilities_data``
    for these models, in this order)."""
    return alt.Chart(table()).mark_bar().encode(
        y=alt.Y("model:N", sort=list(models), title=None, axis=alt.Axis(labelLimit=MODEL_LABEL_PX, labelOverlap=False)),
        x=alt.X("probability:Q", stack="normalize", title="probability of each team", axis=alt.Axis(format="%")),
        color=alt.Color("class:N", scale=alt.Scale(range=[BLUE, ORANGE, GREEN, PURPLE]),
                        legend=alt.Legend(orient="bottom", title=None, labelLimit=MODEL_LABEL_PX, columns=2)),
        order=alt.Order("class:N"),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("class:N"), alt.Tooltip("probability:Q", format=".3f"),
                 alt.Tooltip("predicted:N")],
    ).properties(height=alt.Step(36), title=title)  # a step per model: a fixed pixel height, fitted by the browser,
    # left one model's bar a pixel tall


def bag_data(comparison, name_a: str, name_b: str) -> pd.DataFrame:
    return pd.DataFrame({"word": comparison.words, name_a: comparison.counts_a, name_b: comparison.counts_b})


def bag_chart(comparison, name_a: str, name_b: str) -> alt.Chart:
    data = bag_data(comparison, name_a, name_b).melt("word", var_name="email", value_name="count")
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("word:N", sort=comparison.words, title=None, axis=alt.Axis(labelAngle=-50, labelOverlap=False)),
        xOffset=alt.XOffset("email:N"),
        y=alt.Y("count:Q", title="times the word appears", axis=alt.Axis(tickMinStep=1)),
        color=alt.Color("email:N", scale=alt.Scale(range=[BLUE, ORANGE]), legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("word:N"), alt.Tooltip("email:N"), alt.Tooltip("count:Q")],
    ).properties(height=220, title=f"What a bag-of-words model sees (cosine similarity {comparison.cosine:.3f})")


@figure("probabilities")
def probabilities(traces: dict, title: str = "") -> Figure:
    """Each classifier's probability for each team (traces: label -> ClassifierTrace)."""
    return drawn(probabilities_chart, probabilities_data(traces), tuple(traces), title=title)


@figure("bag-of-words")
def bag_of_words(comparison, name_a: str, name_b: str) -> Figure:
    """What a bag of words sees of two emails: the same counts."""
    return drawn(bag_chart, bag_data(comparison, name_a, name_b), comparison, name_a, name_b)
