"""Gradients through time on trained models: saliency per word and ‖∂h_T/∂h_k‖ against distance (log axes)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.base import LOG_FLOOR, model_legend, position_labels, table
from seqviz.charts.colours import GREY, model_colours
from seqviz.charts.figure import Figure, drawn, figure


def saliency_data(saliencies: dict) -> pd.DataFrame:
    """One row per (model, position) from {model name: Saliency}; steps back counted from the last word."""
    rows = []
    for model, s in saliencies.items():
        words = position_labels(s.tokens)
        for t, (word, norm) in enumerate(zip(words, s.norms, strict=True)):
            rows.append({"model": model, "word": word, "steps back from the end": len(words) - 1 - t,
                         "gradient size": float(norm), "predicted": s.predicted})
    return pd.DataFrame(rows)


def saliency_chart(colours: dict[str, str]) -> alt.LayerChart:
    """Gradient size against steps back from the last word, a line per model (a template of ``saliency_data``;
    ``colours``: {model label: colour}, see model_colour). A zero gradient has no place on the log axis."""
    base = alt.Chart().encode(
        x=alt.X("steps back from the end:Q", title="steps back from the last word", axis=alt.Axis(tickMinStep=1)),
        y=alt.Y("gradient size:Q", scale=alt.Scale(type="log"), title="‖∂ score / ∂ xₜ‖ (log scale)"),
        color=alt.Color("model:N", scale=model_colours(colours), legend=model_legend()),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("word:N"), alt.Tooltip("steps back from the end:Q"),
                 alt.Tooltip("gradient size:Q", format=".3e"), alt.Tooltip("predicted:N")],
    )
    return alt.layer(base.mark_line(), base.mark_point(filled=True, size=35), data=table()).transform_filter(
        alt.datum["gradient size"] > 0).properties(height=300, title="How strongly each word can move the decision")


def jacobian_data(curves: dict) -> pd.DataFrame:
    """One row per (curve, distance) from {(model, state): JacobianCurve}, plus Pascanu et al.'s bound for
    the trained plain RNN curves."""
    rows = []
    for (model, state), curve in curves.items():
        for d, n in zip(curve.distance, curve.norm, strict=True):
            rows.append({"model": model, "state": state, "T − k": int(d), "norm": float(n), "bound": False})
        if curve.eta is not None and state != "untrained":
            for d in curve.distance:
                rows.append({"model": f"bound η^(T−k), η = {curve.eta:.2f} ({model}, {state})", "state": state,
                             "T − k": int(d), "norm": float(curve.eta ** d), "bound": True})
    data = pd.DataFrame(rows)
    data = data[(data["norm"] > LOG_FLOOR) & np.isfinite(data["norm"])]
    # A bound far above every measurement says nothing and would squash the chart: cut it off.
    ceiling = max(1.0, float(data.loc[~data["bound"], "norm"].max())) * 1e3
    return data[~data["bound"] | (data["norm"] <= ceiling)]


def jacobian_chart(colours: dict[str, str]) -> alt.LayerChart:
    """Measured ‖∂h_T/∂h_k‖ against distance, a line per (model, state), and the bound of each trained plain RNN
    (a template of ``jacobian_data``). States in alphabetical order, "trained", "untrained", then a scaled
    copy ("with W_h × 2"), are drawn solid, dashed and dotted."""
    encode = dict(
        x=alt.X("T − k:Q", title="distance T − k (steps)"),
        y=alt.Y("norm:Q", scale=alt.Scale(type="log"), title="‖∂h_T/∂h_k‖ (log scale)"),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("state:N"), alt.Tooltip("T − k:Q"),
                 alt.Tooltip("norm:Q", format=".3e")],
    )
    measured = alt.Chart().mark_line(strokeWidth=2.5).encode(
        color=alt.Color("model:N", scale=model_colours(colours), legend=model_legend("model")),
        strokeDash=alt.StrokeDash("state:N", sort="ascending", scale=alt.Scale(range=[[1, 0], [6, 4], [8, 3, 2, 3]]),
                                  legend=alt.Legend(orient="top", title="weights", labelLimit=300, symbolSize=400,
                                                    direction="horizontal")),
        **encode).transform_filter(~alt.datum.bound)
    bound = alt.Chart().mark_line(strokeWidth=1.2, color=GREY, strokeDash=[2, 3]).encode(
        detail="model:N", **encode).transform_filter(alt.datum.bound)
    return alt.layer(measured, bound, data=table()).properties(
        height=340, title="How much of the gradient survives T − k steps (grey dotted: Pascanu et al.'s bound)")


@figure("saliency")
def saliency(saliencies: dict, colours: dict[str, str]) -> Figure:
    """‖∂score/∂x_t‖ per word, one line per model (saliencies: label -> trace)."""
    return drawn(saliency_chart, saliency_data(saliencies), colours)


@figure("jacobian")
def jacobian(curves: dict, colours: dict[str, str]) -> Figure:
    """‖∂h_T/∂h_t‖ against the distance T − t, one line per model."""
    return drawn(jacobian_chart, jacobian_data(curves), colours)
