"""The chapter's worked figures: the tiny RNN's memory and gradient, and the worked attention example."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.analysis.attention_example import WorkedAttention
from seqviz.analysis.tiny_rnn import CHAPTER_PRODUCT, CHAPTER_STEPS_BACK, TinyRNNRun
from seqviz.charts.base import LOG_FLOOR, position_labels, table
from seqviz.charts.colours import BLUE, GREEN, GREY, LABEL_GREY, ORANGE, VERMILLION
from seqviz.charts.figure import Figure, drawn, figure

# --- The tiny RNN --------------------------------------------------------------------------------


def tiny_rnn_data(run: TinyRNNRun) -> pd.DataFrame:
    """One row per step t: input x_t, memory h_t, local slope w·f'(a_t)."""
    return pd.DataFrame({
        "step": np.arange(1, run.steps + 1),
        "input x_t": run.inputs,
        "memory h_t": run.hidden,
        "local slope w·f'(a_t)": run.local_slope,
    })


def memory_chart() -> alt.LayerChart:
    """The memory h_t, step by step (a template of ``tiny_rnn_data``)."""
    base = alt.Chart().encode(
        x=alt.X("step:Q", title="step t", axis=alt.Axis(tickMinStep=1), scale=alt.Scale(domainMin=1)),
        y=alt.Y("memory h_t:Q", title="memory hₜ"),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("input x_t:Q", format=".3f"),
                 alt.Tooltip("memory h_t:Q", format=".3f")],
    )
    return alt.layer(base.mark_line(color=BLUE), base.mark_point(color=BLUE, filled=True, size=50),
                     data=table()).properties(height=260, title="The memory hₜ, step by step")


GRADIENT_SERIES = ("one step's factor w·f′", "product over k steps = ∂h_T / ∂h_(T−k)")


def gradient_data(run: TinyRNNRun) -> pd.DataFrame:
    """One row per (steps back k, series): |local factor| and |∂h_T/∂h_{T-k}|, with their signs."""
    k = np.arange(1, run.steps + 1)
    factor = run.local_slope[::-1]  # factor of the step k-1 steps before the last
    rows = []
    for series, values in zip(GRADIENT_SERIES, (factor, run.gradient), strict=True):
        for kk, v in zip(k, values, strict=True):
            rows.append({"steps back k": int(kk), "series": series, "value": float(v),
                         "magnitude": float(abs(v)) if np.isfinite(v) else np.nan})
    data = pd.DataFrame(rows)
    data["drawn"] = data["magnitude"] >= LOG_FLOOR
    return data


def gradient_chart(show_chapter_point: bool = True) -> alt.LayerChart:
    """The local factor and the product of factors against steps back, on a log axis (a template of
    ``gradient_data``; rows too small for the log axis are not drawn); the chapter's figure as a diamond."""
    colours = alt.Scale(domain=list(GRADIENT_SERIES), range=[ORANGE, BLUE])
    base = alt.Chart().encode(
        # 10 px of room past the last step: the chapter's diamond sits there, and was cut in half
        x=alt.X("steps back k:Q", title="steps back k", axis=alt.Axis(tickMinStep=1), scale=alt.Scale(padding=10)),
        y=alt.Y("magnitude:Q", title="size (log scale)", scale=alt.Scale(type="log"), axis=alt.Axis(format=".0e")),
        color=alt.Color("series:N", scale=colours, legend=alt.Legend(orient="bottom", title=None,
                                                                    labelLimit=400, columns=1)),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("steps back k:Q"), alt.Tooltip("value:Q", format=".3e")],
    )
    layers = [alt.layer(base.mark_line(), base.mark_point(filled=True, size=40), data=table()
                        ).transform_filter(alt.datum.drawn)]
    if show_chapter_point:
        ref = pd.DataFrame({"steps back k": [CHAPTER_STEPS_BACK], "magnitude": [CHAPTER_PRODUCT],
                            "label": ["chapter: (0.5 × 0.75)²⁰ ≈ 3 × 10⁻⁹"]})
        ref_base = alt.Chart(ref).encode(
            x="steps back k:Q", y="magnitude:Q",
            tooltip=[alt.Tooltip("label:N", title="reference"), alt.Tooltip("magnitude:Q", format=".2e")])
        layers += [ref_base.mark_point(shape="diamond", size=120, color=VERMILLION, filled=True),
                   ref_base.mark_text(align="right", dx=-10, dy=-10, color=VERMILLION).encode(text="label:N")]
    return alt.layer(*layers).properties(height=300, title="How much gradient reaches k steps back")


# --- The worked attention example ----------------------------------------------------------------


def attention_steps_data(worked: WorkedAttention) -> pd.DataFrame:
    """The chapter's three steps as a table: one row per word."""
    d = worked.keys.shape[1]
    data = pd.DataFrame({"word": list(worked.words)})
    for i in range(d):
        data[f"k[{i + 1}]"] = worked.keys[:, i]
    data["score q·k"] = worked.scores
    data["e^score"] = worked.exp_scores
    data["weight α"] = worked.weights
    return data


def attention_weights_chart(worked: WorkedAttention) -> alt.LayerChart:
    data = attention_steps_data(worked)
    data["label"] = position_labels(worked.words)
    base = alt.Chart().encode(
        y=alt.Y("label:N", title=None, sort="ascending", axis=alt.Axis(labelOverlap=False, labelLimit=200)),
        x=alt.X("weight α:Q", title="softmax weight α", scale=alt.Scale(domain=[0, 1])),
        tooltip=[alt.Tooltip("word:N"), alt.Tooltip("score q·k:Q", format=".3f"),
                 alt.Tooltip("e^score:Q", format=".3f"), alt.Tooltip("weight α:Q", format=".3f")],
    )
    bars = base.mark_bar(color=BLUE)
    text = base.mark_text(align="left", dx=4, color=LABEL_GREY).encode(text=alt.Text("weight α:Q", format=".3f"))
    return alt.layer(bars, text, data=data).properties(height=40 * len(data) + 30,
                                                       title="Weights after softmax (they add to 1)")


def context_mix_data(worked: WorkedAttention) -> pd.DataFrame:
    """Segments for the 2-D picture: each key from the origin, and the weighted keys laid head to tail."""
    rows = []
    for word, key in zip(worked.words, worked.keys, strict=True):
        rows.append({"part": "key vector", "word": word, "x": 0.0, "y": 0.0, "x2": key[0], "y2": key[1],
                     "weight": np.nan})
    start = np.zeros(2)
    for word, key, w in zip(worked.words, worked.keys, worked.weights, strict=True):
        end = start + w * key
        rows.append({"part": "α × key, added", "word": word, "x": start[0], "y": start[1], "x2": end[0],
                     "y2": end[1], "weight": w})
        start = end
    rows.append({"part": "query q", "word": "q", "x": 0.0, "y": 0.0, "x2": worked.query[0],
                 "y2": worked.query[1], "weight": np.nan})
    return pd.DataFrame(rows)


def context_mix_chart(worked: WorkedAttention) -> alt.LayerChart:
    """The context vector drawn as a weighted mix of the key vectors (2-D keys only)."""
    if worked.keys.shape[1] != 2:
        raise ValueError("the picture needs 2-D vectors")
    data = context_mix_data(worked)
    parts = ["key vector", "α × key, added", "query q"]
    colour = alt.Color("part:N", scale=alt.Scale(domain=[*parts, "context"],
                                                 range=[GREY, BLUE, GREEN, VERMILLION]),
                       legend=alt.Legend(orient="bottom", title=None, columns=2))
    tooltip = [alt.Tooltip("part:N"), alt.Tooltip("word:N"), alt.Tooltip("x2:Q", title="to x", format=".3f"),
               alt.Tooltip("y2:Q", title="to y", format=".3f"), alt.Tooltip("weight:Q", format=".3f")]
    lo = float(min(0.0, data[["x", "x2"]].min().min(), data[["y", "y2"]].min().min())) - 0.15
    hi = float(max(1.0, data[["x", "x2"]].max().max(), data[["y", "y2"]].max().max())) + 0.25
    scale = alt.Scale(domain=[lo, hi], nice=False)
    base = alt.Chart().encode(x=alt.X("x:Q", scale=scale, title="dimension 1"),
                                  y=alt.Y("y:Q", scale=scale, title="dimension 2"),
                                  x2="x2:Q", y2="y2:Q", color=colour, tooltip=tooltip)
    # Keys first and thick, the query dashed on top: with the chapter's numbers q lies along "parcel".
    segments = alt.layer(base.mark_rule(strokeWidth=4).transform_filter(alt.datum.part != "query q"),
                         base.mark_rule(strokeWidth=2, strokeDash=[6, 4]).transform_filter(alt.datum.part == "query q"),
                         data=data)
    tips = alt.Chart(data).mark_point(filled=True, size=60).encode(
        x=alt.X("x2:Q", scale=scale), y=alt.Y("y2:Q", scale=scale), color=colour, tooltip=tooltip)
    key_labels = alt.Chart(data[data["part"] == "key vector"]).mark_text(
        align="left", dx=7, dy=-7, fontSize=13).encode(
        x=alt.X("x2:Q", scale=scale), y=alt.Y("y2:Q", scale=scale), text="word:N", color=colour)
    query_label = alt.Chart(data[data["part"] == "query q"]).mark_text(
        align="left", dx=7, dy=14, fontSize=13, fontStyle="italic").encode(
        x=alt.X("x2:Q", scale=scale), y=alt.Y("y2:Q", scale=scale), text="word:N", color=colour)
    ctx = pd.DataFrame({"part": ["context"], "x": [worked.context[0]], "y": [worked.context[1]],
                        "label": [f"context\n({worked.context[0]:.3f}, {worked.context[1]:.3f})"]})
    ctx_base = alt.Chart().encode(x=alt.X("x:Q", scale=scale), y=alt.Y("y:Q", scale=scale),
                                     tooltip=[alt.Tooltip("label:N", title="context")])
    ctx_marks = alt.layer(ctx_base.mark_point(shape="diamond", size=160, filled=True, color=VERMILLION),
                          ctx_base.mark_text(align="left", dx=9, dy=12, color=VERMILLION, fontSize=13,
                                             lineBreak="\n").encode(
                              text="label:N"), data=ctx)
    return alt.layer(segments, tips, key_labels, query_label, ctx_marks).properties(
        height=380, title="The context: a weighted mix of the keys")


@figure("tiny-rnn-memory")
def tiny_rnn_memory(run: TinyRNNRun) -> Figure:
    """The chapter's tiny RNN: its memory h_t word by word."""
    return drawn(memory_chart, tiny_rnn_data(run))


@figure("tiny-rnn-gradient")
def tiny_rnn_gradient(run: TinyRNNRun, show_chapter_point: bool = True) -> Figure:
    """The chapter's tiny RNN: how much of the gradient reaches each step back."""
    return drawn(gradient_chart, gradient_data(run), show_chapter_point)


@figure("attention-weights")
def attention_weights(worked: WorkedAttention) -> Figure:
    """The worked example's scores and softmax weights."""
    return drawn(attention_weights_chart, attention_steps_data(worked), worked)


@figure("context-mix")
def context_mix(worked: WorkedAttention) -> Figure:
    """The worked example's context vector as the weighted mix of the word vectors."""
    return drawn(context_mix_chart, context_mix_data(worked), worked)
