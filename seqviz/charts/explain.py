"""Is attention an explanation? Attention beside two other measures of what an output depended on, their
agreement (Kendall's τ) over held-out data, and what happens to the output when the weights are replaced."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.base import MODEL_LABEL_PX, model_legend, position_labels, table
from seqviz.charts.colours import BLUE, GREEN, GREY, LABEL_GREY, ORANGE, VERMILLION, model_colours
from seqviz.charts.figure import Figure, drawn, figure
from seqviz.charts.heatmaps import heatmap, heatmap_data

# The three measures of how much word j mattered, as their columns and panels are named.
ATTENTION, GRADIENT, LEAVE_ONE_OUT = "attention α", "gradient ‖∂ log p / ∂e‖", "leave-one-out drop in log p"
MEASURE_COLOURS = {ATTENTION: BLUE, GRADIENT: ORANGE, LEAVE_ONE_OUT: GREEN}


SCALED = " (share of the largest)"  # a drawn column: the measure over its largest size, so every panel reads 0..1


def importance_data(tokens: list[str], attention, gradient, leave_one_out) -> pd.DataFrame:
    """One row per word: its attention weight (None: the model does not attend), gradient and leave-one-out, and
    each over its largest size (what the panels draw: their units differ, and only their order matters to τ)."""
    columns = {"word": position_labels(tokens)}
    if attention is not None:
        columns[ATTENTION] = np.asarray(attention, dtype=float)
    columns[GRADIENT] = np.asarray(gradient, dtype=float)
    columns[LEAVE_ONE_OUT] = np.asarray(leave_one_out, dtype=float)
    for measure in (ATTENTION, GRADIENT, LEAVE_ONE_OUT):
        if measure in columns:
            values = columns[measure]
            largest = float(np.abs(values).max()) if values.size else 0.0
            columns[measure + SCALED] = values / largest if largest > 0 else values
    return pd.DataFrame(columns)


def importance_chart(measures: tuple[str, ...] = (ATTENTION, GRADIENT, LEAVE_ONE_OUT), title: str = ""
                     ) -> alt.HConcatChart:
    """One panel per measure, the words down the side: does attention rank the words as the output's own
    sensitivity does? (a template of ``importance_data``; each panel draws its measure over its largest size, the
    tooltips give the numbers themselves; leave-one-out below zero: the word was in the way)."""
    panels = []
    for number, measure in enumerate(measures):
        axis = alt.Axis(labelOverlap=False, labelLimit=160) if number == 0 else None  # the words once, on the left
        panels.append(alt.Chart().mark_bar(color=MEASURE_COLOURS[measure]).encode(
            y=alt.Y("word:N", sort="ascending", title=None, axis=axis),
            x=alt.X(f"{measure}{SCALED}:Q", title=measure, scale=alt.Scale(domain=[-1, 1] if measure == LEAVE_ONE_OUT
                                                                           else [0, 1]),
                    axis=alt.Axis(tickCount=3, format="~g")),
            tooltip=[alt.Tooltip("word:N"), alt.Tooltip(f"{measure}:Q", format=".3g")],
        ).properties(height=alt.Step(18), width=140))
    chart = alt.hconcat(*panels, data=table(), spacing=16)
    return chart.properties(title=title) if title else chart


TAU = "Kendall τ"


def tau_data(taus: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """{model: {"attention vs gradient": [τ, ...], "attention vs leave-one-out": [...]}} as one row per τ (one per
    output word of a translator, or per email of a classifier)."""
    rows = [{"model": model, "comparison": comparison, TAU: float(value)}
            for model, by_comparison in taus.items() for comparison, values in by_comparison.items()
            for value in values]
    return pd.DataFrame(rows, columns=["model", "comparison", TAU])


def tau_chart(colours: dict[str, str], unit: str = "output words") -> alt.VConcatChart:
    """How often attention agrees with each other measure on held-out data: one histogram of τ per comparison,
    one colour per model, counted in ``unit`` (a template of ``tau_data``). τ = 1: the same ranking of the
    words; 0: no relation; −1: the reverse."""
    panels = []
    for comparison in ("attention vs gradient", "attention vs leave-one-out"):
        bars = alt.Chart().mark_bar(opacity=0.6, binSpacing=0).encode(
            x=alt.X(f"{TAU}:Q", bin=alt.Bin(extent=[-1, 1], step=0.1), title=f"τ, {comparison}",
                    scale=alt.Scale(domain=[-1, 1])),
            y=alt.Y("count():Q", stack=None, title=unit),
            color=alt.Color("model:N", scale=model_colours(colours), legend=model_legend()),
            tooltip=[alt.Tooltip("model:N"), alt.Tooltip(f"{TAU}:Q", bin=True), alt.Tooltip("count():Q")],
        ).transform_filter(alt.datum.comparison == comparison)
        zero = alt.Chart().mark_rule(color=GREY, strokeDash=[4, 4]).encode(x=alt.datum(0))
        panels.append(alt.layer(bars, zero).properties(width=300, height=150))
    return alt.vconcat(*panels, data=table(), title="Held out: how well attention ranks the words")


ABLATION_NAMES = {"none": "its own attention", "uniform": "uniform weights", "permuted": "its weights, shuffled"}


def ablation_data(results: dict[str, dict[str, float | None]]) -> pd.DataFrame:
    """{model: {"none": exact match, "uniform": ..., "permuted": ...}} as one row per (model, weights)."""
    rows = [{"model": model, "attention weights": ABLATION_NAMES[ablation], "exact match": value}
            for model, by_ablation in results.items() for ablation, value in by_ablation.items() if value is not None]
    return pd.DataFrame(rows, columns=["model", "attention weights", "exact match"])


def ablation_chart(models: tuple[str, ...]) -> alt.LayerChart:
    """Held-out exact match with the model's own attention, uniform weights, and its own weights shuffled over the
    source words (a template of ``ablation_data``)."""
    base = alt.Chart().encode(
        y=alt.Y("model:N", sort=list(models), title=None,
                axis=alt.Axis(labelLimit=MODEL_LABEL_PX, labelOverlap=False)),
        yOffset=alt.YOffset("attention weights:N", sort=list(ABLATION_NAMES.values())),
        x=alt.X("exact match:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        color=alt.Color("attention weights:N", sort=list(ABLATION_NAMES.values()),
                        scale=alt.Scale(domain=list(ABLATION_NAMES.values()), range=[BLUE, GREY, VERMILLION]),
                        legend=alt.Legend(orient="bottom", title=None, columns=1)),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("attention weights:N"),
                 alt.Tooltip("exact match:Q", format=".1%")],
    )
    text = base.mark_text(align="left", dx=3, fontSize=11).encode(
        text=alt.Text("exact match:Q", format=".0%"), color=alt.value(LABEL_GREY))
    return alt.layer(base.mark_bar(), text, data=table()).properties(
        height=alt.Step(48), title="Held-out exact match when attention is replaced")


def pronoun_data(tokens: list[str], weights, word: str) -> pd.DataFrame:
    """(L, N, T) weights that ``word`` pays to every word, as a heatmap table: one row per layer and head."""
    weights = np.asarray(weights, dtype=float)
    layers, heads, _ = weights.shape
    rows = [f"layer {layer + 1}, head {head + 1}" for layer in range(layers) for head in range(heads)]
    return heatmap_data(weights.reshape(layers * heads, -1), rows, position_labels(tokens), "weight")


def pronoun_chart(word: str = "it", cell: int = 18) -> alt.LayerChart:
    """Where ``word`` looks in each layer and head (a template of ``pronoun_data``)."""
    return heatmap(value="weight", row_title="", col_title=f"word “{word}” attends to", cell=cell,
                   title=f"Where “{word}” looks, every layer and head")


@figure("importance")
def importance(tokens: list[str], attention, gradient, leave_one_out, title: str = "") -> Figure:
    """Attention beside gradient and leave-one-out importance for each word (attention None: the other two)."""
    measures = (ATTENTION, GRADIENT, LEAVE_ONE_OUT) if attention is not None else (GRADIENT, LEAVE_ONE_OUT)
    return drawn(importance_chart, importance_data(tokens, attention, gradient, leave_one_out), measures, title=title)


@figure("taus")
def taus(taus: dict[str, dict[str, list[float]]], colours: dict[str, str], unit: str = "output words") -> Figure:
    """Histograms of Kendall's τ between attention and each measure, one per model (taus: label -> name -> τs)."""
    return drawn(tau_chart, tau_data(taus), colours, unit=unit)


@figure("attention-replaced")
def attention_replaced(results: dict[str, dict[str, float | None]]) -> Figure:
    """Held-out exact match with the model's own attention, uniform weights and its weights shuffled."""
    return drawn(ablation_chart, ablation_data(results), tuple(results))


@figure("pronoun")
def pronoun(tokens: list[str], weights, word: str = "it") -> Figure:
    """Where ``word`` looks in every layer and head (weights: layers × heads × words)."""
    return drawn(pronoun_chart, pronoun_data(tokens, weights, word), word)
