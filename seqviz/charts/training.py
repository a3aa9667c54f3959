"""Training in the app: a run's held-out metric and training loss against steps."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.colours import BLUE, VERMILLION
from seqviz.charts.figure import Figure, drawn, figure

MAX_CURVE_POINTS = 300  # a loss curve is drawn from at most this many points (means over runs of steps)


def training_data(losses, metric_history, metric_name: str) -> pd.DataFrame:
    """One row per drawn point: the training loss (binned to MAX_CURVE_POINTS means) and the held-out metric."""
    rows = []
    losses = [(int(s), float(v)) for s, v in losses if np.isfinite(v)]
    size = max(1, -(-len(losses) // MAX_CURVE_POINTS))
    for start in range(0, len(losses), size):
        chunk = losses[start : start + size]
        rows.append({"step": chunk[-1][0], "curve": "training loss", "value": float(np.mean([v for _, v in chunk]))})
    rows += [{"step": int(s), "curve": metric_name, "value": float(v)} for s, v in metric_history]
    return pd.DataFrame(rows, columns=["step", "curve", "value"])


def training_chart(losses, metric_history, metric_name: str, steps: int) -> alt.VConcatChart:
    """The run so far: the held-out metric (what a preset tells you to watch) above the training loss (log
    scale), against steps. One above the other, each narrow enough for a phone's screen: side by side, the
    held-out chart sat off a phone's screen."""
    data = training_data(losses, metric_history, metric_name)
    x = alt.X("step:Q", title="training step", scale=alt.Scale(domain=[0, max(1, steps)]))
    tooltip = [alt.Tooltip("step:Q"), alt.Tooltip("value:Q", format=".4f")]
    loss = alt.Chart(data[data["curve"] == "training loss"]).mark_line(color=VERMILLION).encode(
        x=x, y=alt.Y("value:Q", scale=alt.Scale(type="log"), title="training loss (log scale)"), tooltip=tooltip,
    ).properties(width=240, height=200, title="Training loss")
    held_out = alt.Chart()
    metric = alt.layer(held_out.mark_line(color=BLUE), held_out.mark_point(color=BLUE, filled=True),
                       data=data[data["curve"] == metric_name]).encode(
        x=x, y=alt.Y("value:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title=metric_name),
        tooltip=tooltip,
    ).properties(width=240, height=200, title="Held-out " + metric_name.removeprefix("held-out "))
    return alt.vconcat(metric, loss)


@figure("training-curves")
def training_curves(losses, metric_history, metric_name: str, steps: int) -> Figure:
    """A run's loss and held-out measure against steps."""
    return drawn(training_chart, training_data(losses, metric_history, metric_name), losses, metric_history,
                 metric_name, steps)
