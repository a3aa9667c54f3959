"""Inside one head (BertViz's neuron view): the query and key vectors, their products, the scores and the softmax;
and an LSTM's units that stay on across a phrase (LSTMVis's "units like this")."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.base import _on_canvas, position_labels, table
from seqviz.charts.figure import Figure, drawn, figure
from seqviz.charts.heatmaps import heatmap_data

VECTOR_PANELS = {"query q": "The query q of the word asking", "keys k_j": "Every word's key k_j",
                 "products q ⊙ k_j": "Products q ⊙ k_j: each row adds up to q · k_j"}
MIX_PANELS = {"values v_j": "(3) Every word's value v_j, weighted by its α_j",
              "output Σ α_j v_j": "The mix Σ_j α_j v_j: the head's output for the word"}
STEP_COLUMNS = ("q·k_j", "q·k_j/√d_k", "softmax α_j")  # steps (1) and (2), as the table names them


def _panels_data(step, panels) -> pd.DataFrame:
    """One row per (panel, row, dimension) of (panel name, (rows, d_k) matrix, row labels) triples."""
    dims = [f"{d + 1:0{max(2, len(str(step.d_k)))}d}" for d in range(step.d_k)]
    frames = []
    for name, matrix, rows in panels:
        frame = heatmap_data(matrix, rows, dims)
        frame.insert(0, "panel", name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).rename(columns={"row": "word", "column": "dimension"})


def vectors_data(step) -> pd.DataFrame:
    """One row per (panel, word, dimension) of a seqviz.analysis.neurons.NeuronStep: q_i, every k_j, every q_i ⊙ k_j."""
    words = position_labels(step.tokens)
    names = list(VECTOR_PANELS)
    return _panels_data(step, ((names[0], step.q[None, :], [f"q of {words[step.query]}"]),
                               (names[1], step.keys, words), (names[2], step.products, words)))


def mix_data(step) -> pd.DataFrame:
    """Step (3) of a NeuronStep: every value v_j (its row named with its weight α_j) and the mix Σ_j α_j v_j."""
    words = position_labels(step.tokens)
    names = list(MIX_PANELS)
    weighted = [f"{w} · α {a:.2f}" for w, a in zip(words, step.weights, strict=True)]
    return _panels_data(step, ((names[0], step.values, weighted),
                               (names[1], step.mixed[None, :], [f"output for {words[step.query]}"])))


def dimension_px(d_k: int) -> int:
    """Px per dimension: 16 numbers per head fit a phone's column beside the words; wider heads get thinner cells."""
    return max(4, min(14, 224 // max(d_k, 1)))


def _vector_panels(titles: dict[str, str], cell: int, description: str) -> alt.VConcatChart:
    """Heatmaps of the table's panels (``titles``: panel -> title), one above the other, numbers per head as
    columns, each with its own diverging colour scale (red positive, blue negative)."""
    panels = [alt.Chart(table()).mark_rect().encode(
        x=alt.X("dimension:N", sort="ascending", title="number d of the head's d_k",
                axis=alt.Axis(labels=False, ticks=False, orient="top")),
        y=alt.Y("word:N", sort="ascending", title=None, axis=alt.Axis(labelOverlap=False, labelLimit=150)),
        color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domainMid=0, reverse=True), title=None,
                        legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=160)),
        tooltip=[alt.Tooltip("word:N"), alt.Tooltip("dimension:N"), alt.Tooltip("value:Q", format=".3f")],
    ).transform_filter(alt.datum.panel == name).properties(title=title, width=alt.Step(cell), height=alt.Step(15))
        for name, title in titles.items()]
    return _on_canvas(alt.vconcat(*panels, spacing=18).resolve_scale(color="independent"), description)


def vectors_chart(cell: int = 14) -> alt.VConcatChart:
    """Three heatmaps: the query q_i (one row), every key k_j, every product q_i ⊙ k_j (rows: the words). Each row of
    the products adds up to q_i · k_j (a template of ``vectors_data``; ``cell`` from ``dimension_px``)."""
    return _vector_panels(VECTOR_PANELS, cell,
                          "Heatmaps of the query vector, every key vector and their products, number by number")


def mix_chart(cell: int = 14) -> alt.VConcatChart:
    """Two heatmaps: every value v_j (rows: the words, with their weights α_j) and the head's output Σ_j α_j v_j (a
    template of ``mix_data``)."""
    return _vector_panels(MIX_PANELS, cell, "Heatmaps of every value vector and of their mix by the weights")


def scores_data(step) -> pd.DataFrame:
    """One row per key word j: q·k_j, the score q·k_j/√d_k, the softmax weight α_j, and the model's own weight."""
    return pd.DataFrame({
        "word": position_labels(step.tokens), STEP_COLUMNS[0]: step.dots, STEP_COLUMNS[1]: step.scaled,
        STEP_COLUMNS[2]: step.weights, "weight in the model's pass": step.model_weights, "may look": step.allowed,
    })


def scores_chart(d_k: int = 16) -> alt.HConcatChart:
    """The three columns of numbers per key word, side by side, each cell coloured by its value and written in it:
    q·k_j, divided by √d_k, then the softmax (a template of ``scores_data``)."""
    root = np.sqrt(d_k)
    heads = ("q · k_j", f"÷ √{d_k} = {root:.3g}", "softmax α_j")
    panels = []
    for number, (column, head) in enumerate(zip(STEP_COLUMNS, heads, strict=True)):
        weight = column == STEP_COLUMNS[2]
        scale = (alt.Scale(scheme="blues", domain=[0, 1]) if weight
                 else alt.Scale(scheme="redblue", domainMid=0, reverse=True))
        base = alt.Chart().encode(y=alt.Y("word:N", sort="ascending", title=None, axis=alt.Axis(
            labelOverlap=False, labelLimit=120) if number == 0 else None))
        rect = base.mark_rect().encode(
            color=alt.Color(f"{column}:Q", scale=scale, legend=None),
            tooltip=[alt.Tooltip("word:N"), *(alt.Tooltip(f"{c}:Q", format=".4f") for c in STEP_COLUMNS)])
        # A number on a dark cell is white, on a light one black: the cell's fill, not the page's theme, is behind it.
        # A diverging scale with 0 at its middle is darkest at each side's own end: -44 and +11 are both dark.
        dark = (f"datum['{column}'] > 0.5" if weight else
                f"(datum['{column}'] > 0 && datum['{column}'] > 0.6 * datum.top) || "
                f"(datum['{column}'] < 0 && datum['{column}'] < 0.6 * datum.bottom)")
        text = base.mark_text(fontSize=11).encode(
            text=alt.Text(f"{column}:Q", format=".3f" if weight else "+.2f"),
            color=alt.condition(dark, alt.value("white"), alt.value("black")))
        panels.append(alt.layer(rect, text, data=table()).transform_joinaggregate(
            top=f"max({column})", bottom=f"min({column})").properties(
            title=alt.TitleParams(head, anchor="middle", fontSize=12), width=72, height=alt.Step(20)))
    # Each column its own colour scale (a concatenation shares one by default: the weights took the scores' colours).
    return alt.hconcat(*panels, spacing=4).resolve_scale(color="independent").properties(
        description="Per key word: q·k, the score q·k/√d_k and the softmax weight, written in coloured cells")


@figure("neuron-vectors")
def neuron_vectors(step) -> Figure:
    """BertViz's neuron view, its vectors: q_i, every k_j and their products q_i ⊙ k_j, for one head and word."""
    return drawn(vectors_chart, vectors_data(step), dimension_px(step.d_k))


@figure("neuron-mix")
def neuron_mix(step) -> Figure:
    """Step (3) inside the head: every value v_j with its weight α_j, and the mix Σ_j α_j v_j."""
    return drawn(mix_chart, mix_data(step), dimension_px(step.d_k))


@figure("neuron-scores")
def neuron_scores(step) -> Figure:
    """BertViz's neuron view, its numbers: q·k_j, ÷ √d_k and the softmax for every key word j."""
    return drawn(scores_chart, scores_data(step), step.d_k)


def units_data(trace, units: list[int], start: int, end: int, threshold: float) -> pd.DataFrame:
    """The ``units``' cell state at every word of an LSTMGateTrace, with the phrase (words start .. end, inclusive)
    and the threshold: one row per unit and word."""
    words = position_labels(trace.tokens)
    rows = [{"word": word, "unit": name, "cell state c": float(trace.cell[t, u]),
             "in the phrase": bool(start <= t <= end), "threshold": float(threshold)}
            for u, name in zip(units, unit_names(trace, units), strict=True) for t, word in enumerate(words)]
    return pd.DataFrame(rows, columns=["word", "unit", "cell state c", "in the phrase", "threshold"])


def unit_names(trace, units: list[int]) -> tuple[str, ...]:
    """"unit 07", ...: as the gates' heatmaps name them, zero-padded so they sort."""
    digits = max(2, len(str(trace.cell.shape[1] - 1)))
    return tuple(f"unit {u:0{digits}d}" for u in units)


def units_chart() -> alt.LayerChart:
    """The chosen units' cell state across the sentence, one line each, over the phrase (shaded) and the threshold
    (dashed): they stay above it across the phrase (a template of ``units_data``). The legend stands at the right,
    one unit per line: its height is the plot's whatever the units, so a new sentence changes only the table."""
    x = alt.X("word:N", sort="ascending", title=None, axis=alt.Axis(labelOverlap=False, labelAngle=-50, labelLimit=140))
    phrase = alt.Chart().transform_filter(alt.datum["in the phrase"]).transform_aggregate(
        groupby=["word"], words="count()").mark_rect(color="#E69F00", opacity=0.22).encode(x=x)
    level = alt.Chart().transform_aggregate(threshold="max(threshold)").mark_rule(
        strokeDash=[6, 4], color="#7A7A7A").encode(y=alt.Y("threshold:Q"))
    base = alt.Chart().encode(
        x=x, y=alt.Y("cell state c:Q", title="cell state c"),
        color=alt.Color("unit:N", scale=alt.Scale(scheme="tableau10"), legend=alt.Legend(orient="right", title=None)),
        tooltip=[alt.Tooltip("word:N"), alt.Tooltip("unit:N"), alt.Tooltip("cell state c:Q", format=".3f")])
    return alt.layer(phrase, level, base.mark_line(), base.mark_point(filled=True, size=30), data=table()).properties(
        height=240, title="These units' cell state c")


@figure("units-like-this")
def units_like_this(trace, units: list[int], start: int, end: int, threshold: float) -> Figure:
    """LSTMVis's selection: the units that stay above ``threshold`` across the phrase, drawn across the sentence."""
    return drawn(units_chart, units_data(trace, units, start, end, threshold))
