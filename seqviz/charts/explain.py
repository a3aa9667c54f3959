"""Is attention an explanation? Attention beside four other measures of what an output depended on, their
agreement with it over held-out data (Kendall's τ and weighted τ), and what happens to the output when the
weights are replaced."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.base import (
    MODEL_LABEL_PX,
    PHONE_AXIS_FONT,
    PHONE_CHART_PX,
    PHONE_FONT_PX,
    has_phone_form,
    model_legend,
    phone_title,
    position_labels,
    side_by_side,
    table,
)
from seqviz.charts.colours import BLUE, GREEN, GREY, LABEL_GREY, ORANGE, PURPLE, SKY, VERMILLION, model_colours
from seqviz.charts.figure import Figure, drawn, figure
from seqviz.charts.heatmaps import heatmap, heatmap_data

# How much word j mattered, as the columns and panels are named: attention, then seqviz.analysis.explain.MEASURES.
ATTENTION = "attention α"
MEASURE_NAMES = {"gradient": "gradient ‖∂ log p / ∂e‖", "gradient_x_input": "gradient × input",
                 "integrated_gradients": "integrated gradients", "leave_one_out": "leave-one-out drop in log p"}
MEASURE_COLOURS = {ATTENTION: BLUE, MEASURE_NAMES["gradient"]: ORANGE, MEASURE_NAMES["gradient_x_input"]: SKY,
                   MEASURE_NAMES["integrated_gradients"]: PURPLE, MEASURE_NAMES["leave_one_out"]: GREEN}
SIGNED = {MEASURE_NAMES[m] for m in ("gradient_x_input", "integrated_gradients", "leave_one_out")}  # may be < 0
SCALED = " (share of the largest)"  # a drawn column: the measure over its largest size, so every panel reads 0..1


def percent(share: float | None) -> str:
    """A share as /explain writes it, on its charts and in its sentences alike: one decimal (2.5%, not 2% or 3%)."""
    return "undefined" if share is None else f"{share:.1%}"


def importance_data(tokens: list[str], measures: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per word: each measure (name -> (T,) values, attention first if the model attends) and each over its
    largest size (what the panels draw: their units differ, and only their order matters to τ)."""
    columns: dict[str, object] = {"word": position_labels(tokens)}
    for measure, values in measures.items():
        values = np.asarray(values, dtype=float)
        largest = float(np.abs(values).max()) if values.size else 0.0
        columns[measure] = values
        columns[measure + SCALED] = values / largest if largest > 0 else values
    return pd.DataFrame(columns)


@has_phone_form
def importance_chart(measures: tuple[str, ...], title: str = "", phone: bool = False
                     ) -> alt.HConcatChart | alt.VConcatChart:
    """One panel per measure, the words down the side: does attention rank the words as the output's own
    sensitivity does? (a template of ``importance_data``; each panel draws its measure over its largest size, the
    tooltips give the numbers themselves; a signed measure below zero: the word was in the way). ``phone``: two
    panels a row, each row with its words, fitting a phone's column."""

    def panel(number, words, x_axis, width):
        measure = measures[number]
        return alt.Chart().mark_bar(color=MEASURE_COLOURS[measure]).encode(
            y=alt.Y("word:N", sort="ascending", title=None, axis=alt.Axis(**words) if words else None),
            x=alt.X(f"{measure}{SCALED}:Q", title=phone_title(measure, width) if phone else measure,
                    scale=alt.Scale(domain=[-1, 1] if measure in SIGNED else [0, 1]),
                    axis=alt.Axis(**{"tickCount": 3, "format": "~g", **x_axis})),
            tooltip=[alt.Tooltip("word:N"), alt.Tooltip(f"{measure}:Q", format=".3g")],
        ).properties(height=alt.Step(18), width=width)

    chart = side_by_side(panel, len(measures), 110, phone).properties(data=table())
    return chart.properties(title=title) if title else chart


STATISTIC_NAMES = {"tau": "Kendall τ", "weighted_tau": "weighted τ"}  # the held-out histograms' two panels


def tau_data(taus: dict[str, dict[str, dict[str, list[float]]]]) -> pd.DataFrame:
    """{model: {measure name: {"tau": [...], "weighted_tau": [...]}}} as one row per value (one per output word of a
    translator, or per email of a classifier)."""
    rows = [{"model": model, "comparison": f"attention vs {measure}", "statistic": STATISTIC_NAMES[statistic],
             "value": float(value)}
            for model, by_measure in taus.items() for measure, by_statistic in by_measure.items()
            for statistic, values in by_statistic.items() for value in values]
    return pd.DataFrame(rows, columns=["model", "comparison", "statistic", "value"])


@has_phone_form(max_rows=None)  # its bins, not its table's rows, make its size
def tau_chart(colours: dict[str, str], comparisons: tuple[str, ...], unit: str = "output words",
              phone: bool = False) -> alt.VConcatChart:
    """How well attention agrees with each other measure on held-out data: per comparison, a histogram of Kendall's
    τ (every pair of words counts the same) beside one of weighted τ (a swap among the top words counts most), one
    colour per model, counted in ``unit`` (a template of ``tau_data``). 1: the same ranking; 0: no relation; −1:
    the reverse. ``phone``: each histogram on a row of its own, as wide as a phone's column."""
    width = PHONE_CHART_PX - 60 if phone else 240  # a phone's: room for the counts' axis on the left
    font = PHONE_AXIS_FONT if phone else {}
    legend = alt.Legend(**model_legend().to_dict(), labelFontSize=PHONE_FONT_PX) if phone else model_legend()
    rows = []
    for comparison in comparisons:
        panels = []
        for statistic in STATISTIC_NAMES.values():
            title = f"{statistic}, {comparison}"
            bars = alt.Chart().mark_bar(opacity=0.6, binSpacing=0).encode(
                x=alt.X("value:Q", bin=alt.Bin(extent=[-1, 1], step=0.1),
                        title=phone_title(title, width) if phone else title, scale=alt.Scale(domain=[-1, 1]),
                        axis=alt.Axis(**font) if phone else alt.Undefined),
                y=alt.Y("count():Q", stack=None, title=unit, axis=alt.Axis(**font) if phone else alt.Undefined),
                color=alt.Color("model:N", scale=model_colours(colours), legend=legend),
                tooltip=[alt.Tooltip("model:N"), alt.Tooltip("value:Q", bin=True, title=statistic),
                         alt.Tooltip("count():Q")],
            ).transform_filter((alt.datum.comparison == comparison) & (alt.datum.statistic == statistic))
            zero = alt.Chart().mark_rule(color=GREY, strokeDash=[4, 4]).encode(x=alt.datum(0))
            panels.append(alt.layer(bars, zero).properties(width=width, height=130))
        rows.extend(panels if phone else [alt.hconcat(*panels)])
    return alt.vconcat(*rows, data=table(), title="Held out: how well attention ranks the words")


ABLATION_NAMES = {"none": "its own attention", "uniform": "uniform weights", "permuted": "its weights, shuffled"}


def ablation_data(results: dict[str, dict[str, float | None]]) -> pd.DataFrame:
    """{model: {"none": exact match, "uniform": ..., "permuted": ...}} as one row per (model, weights), with the
    label written beside each bar (:func:`percent`, as the page's sentences write it)."""
    rows = [{"model": model, "attention weights": ABLATION_NAMES[ablation], "exact match": value,
             "label": percent(value)}
            for model, by_ablation in results.items() for ablation, value in by_ablation.items() if value is not None]
    return pd.DataFrame(rows, columns=["model", "attention weights", "exact match", "label"])


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
                 alt.Tooltip("label:N", title="exact match")],
    )
    text = base.mark_text(align="left", dx=3, fontSize=11).encode(text="label:N", color=alt.value(LABEL_GREY))
    return alt.layer(base.mark_bar(), text, data=table()).properties(
        height=alt.Step(48), title="Held-out exact match when attention is replaced")


def pronoun_data(tokens: list[str], weights, word: str) -> pd.DataFrame:
    """(L, N, T) weights that ``word`` pays to every word, as a heatmap table: one row per layer and head."""
    weights = np.asarray(weights, dtype=float)
    layers, heads, _ = weights.shape
    rows = [f"layer {layer + 1}, head {head + 1}" for layer in range(layers) for head in range(heads)]
    return heatmap_data(weights.reshape(layers * heads, -1), rows, position_labels(tokens), "weight")


@has_phone_form
def pronoun_chart(word: str = "it", cell: int = 18, phone: bool = False) -> alt.LayerChart | alt.FacetChart:
    """Where ``word`` looks in each layer and head (a template of ``pronoun_data``; ``phone``: its words in blocks
    one above the other, see seqviz.charts.heatmaps.heatmap)."""
    return heatmap(value="weight", row_title="", col_title=f"word “{word}” attends to", cell=cell,
                   title=f"Where “{word}” looks, every layer and head", phone=phone)


@figure("importance")
def importance(tokens: list[str], attention, measures: dict[str, np.ndarray], title: str = "") -> Figure:
    """Attention (None: the model does not attend) beside every measure taken of each word (measure -> (T,) values,
    seqviz.analysis.explain's names, None where not taken)."""
    named = {} if attention is None else {ATTENTION: attention}
    named |= {MEASURE_NAMES[m]: values for m, values in measures.items() if values is not None}
    return drawn(importance_chart, importance_data(tokens, named), tuple(named), title=title)


@figure("taus")
def taus(taus: dict[str, dict[str, dict[str, list[float]]]], colours: dict[str, str], unit: str = "output words"
         ) -> Figure:
    """Histograms of Kendall's τ and weighted τ between attention and each measure, one colour per model (label ->
    measure -> statistic -> values)."""
    comparisons = tuple(dict.fromkeys(f"attention vs {MEASURE_NAMES[m]}" for by in taus.values() for m in by))
    renamed = {label: {MEASURE_NAMES[m]: v for m, v in by.items()} for label, by in taus.items()}
    return drawn(tau_chart, tau_data(renamed), colours, comparisons, unit=unit)


@figure("attention-replaced")
def attention_replaced(results: dict[str, dict[str, float | None]]) -> Figure:
    """Held-out exact match with the model's own attention, uniform weights and its weights shuffled."""
    return drawn(ablation_chart, ablation_data(results), tuple(results))


@figure("pronoun")
def pronoun(tokens: list[str], weights, word: str = "it") -> Figure:
    """Where ``word`` looks in every layer and head (weights: layers × heads × words)."""
    return drawn(pronoun_chart, pronoun_data(tokens, weights, word), word)
