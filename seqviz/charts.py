"""Pure functions from traces and analyses to altair charts (no streamlit, no torch).

Each ``*_data`` function returns the tidy table behind a chart (what a page offers
as CSV), and each chart function draws that table. Words on an axis are labelled
by position and text, "03 parcel", so repeated words stay apart and in order.
Every mark has a tooltip. Layers that draw one table share a base chart without data and get the table once,
from ``alt.layer(..., data=data)``: layers that each carry the same frame make altair hash it through its text
form, tens of milliseconds per layer.

Charts of the sentence are *templates*: built from display options only, they draw the table named
``TABLE``, which ``seqviz.ui.chart`` sends beside the spec. A new sentence then changes only the table: the
server builds no chart, and the browser swaps the data in the chart it already has instead of compiling a
new one. Their axes sort words by their position labels (``sort="ascending"``: "01 the" before "02 cat"): with
``sort=None`` the browser, swapping one table for the next, kept labels it already had and put a renamed word
last. Their sizes are steps per word.
"""

from __future__ import annotations

import textwrap

import altair as alt
import numpy as np
import pandas as pd

from seqviz.analysis.attention_example import WorkedAttention
from seqviz.analysis.tiny_rnn import CHAPTER_PRODUCT, CHAPTER_STEPS_BACK, TinyRNNRun

# Colours that stay apart for colour-blind readers (Okabe–Ito).
BLUE, ORANGE, GREEN, VERMILLION, PURPLE, GREY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#777777"

SKY, YELLOW, BLACK = "#56B4E9", "#F0E442", "#000000"
# Numbers written beside bars: a mid grey that reads on the light and the dark theme alike (contrast about
# 4.3:1 on white and on the dark background). Streamlit themes a chart's axes and legends, not its text marks,
# whose default is black.
LABEL_GREY = "#7A7A7A"

# A shipped model's colour is its family's (one shipped model per family and task); a visitor's own model takes
# YOUR_COLOURS by its place in the session's list, so it keeps one colour on every chart of every page. None of
# them is the family colours, and all read on the light and the dark theme.
FAMILY_COLOURS = {"bow": GREY, "rnn": VERMILLION, "gru": GREEN, "lstm": BLUE, "transformer": PURPLE,
                  "plain": VERMILLION, "additive": BLUE, "dot": GREEN, "transformer-seq2seq": PURPLE}
YOUR_COLOURS = (ORANGE, SKY, "#CC6677", "#999933", "#DDCC77", "#44AA99")


def model_colour(family: str, yours: int | None = None) -> str:
    """A shipped model's colour (its family's), or the colour of the visitor's ``yours``-th model."""
    if yours is not None:
        return YOUR_COLOURS[yours % len(YOUR_COLOURS)]
    return FAMILY_COLOURS.get(family, GREY)


def model_legend(title: str | None = None) -> alt.Legend:
    """Models listed one per line under the chart: a row of long names ran off a narrow chart's edge. (Each line
    needs room: seqviz.ui gives a chart LEGEND_ROW_PX more height per line, see legend_rows.)"""
    return alt.Legend(orient="bottom", title=title, labelLimit=MODEL_LABEL_PX, columns=1)


LEGEND_ROW_PX = 30  # one line of a legend (a point symbol needs 30 px, a line 18)


def legend_rows(spec) -> int:
    """The most lines any legend of a chart's spec takes (entries of its scale's domain over its columns)."""
    rows = 1
    if isinstance(spec, dict):
        legend, domain = spec.get("legend"), (spec.get("scale") or {}).get("domain") if isinstance(
            spec.get("scale"), dict) else None
        if isinstance(legend, dict) and legend.get("columns") and isinstance(domain, list):
            rows = -(-len(domain) // legend["columns"])
        return max([rows, *(legend_rows(value) for value in spec.values())])
    if isinstance(spec, list):
        return max([rows, *(legend_rows(value) for value in spec)])
    return rows


TITLE_LINE_CHARS = 38  # a title line that fits a phone's chart (about 300 px of bold text)


def wrap_titles(spec):
    """The spec with every chart title longer than a phone's line broken into lines (Vega draws a list of
    strings as lines; a long title on one line ended in "…" on a narrow screen)."""
    if isinstance(spec, list):
        return [wrap_titles(value) for value in spec]
    if not isinstance(spec, dict):
        return spec
    wrapped = {key: wrap_titles(value) for key, value in spec.items()}
    title = spec.get("title")
    if isinstance(title, str) and len(title) > TITLE_LINE_CHARS and ("mark" in spec or "layer" in spec
                                                                     or "concat" in spec or "hconcat" in spec
                                                                     or "vconcat" in spec or "facet" in spec):
        wrapped["title"] = textwrap.wrap(title, TITLE_LINE_CHARS)
    return wrapped


def model_colours(colours: dict[str, str]) -> alt.Scale:
    """A colour scale for {model label: colour} (see model_colour), in the order given."""
    return alt.Scale(domain=list(colours), range=list(colours.values()))


# Room for a model's name on an axis or in a legend: a visitor's run is named up to 48 characters + " (yours)".
MODEL_LABEL_PX = 360

# Smallest magnitude drawn on a log axis; below it a value is reported as 0.
LOG_FLOOR = 1e-300

# The name under which a template's table travels (seqviz.ui.chart sends it beside the spec).
TABLE = "table"


def table() -> alt.NamedData:
    """The data of a template: the table sent with it, whatever the sentence."""
    return alt.NamedData(TABLE)


def _on_canvas(chart, description: str):
    """A heatmap template as the browser draws it fastest: on a canvas, with one label for the whole chart
    (``description``, what a screen reader says; the CSV beside it holds every number) instead of an SVG
    element and an ARIA label per cell, hundreds of each, rebuilt for every sentence."""
    return chart.properties(description=description, usermeta={"embedOptions": {"renderer": "canvas"}}
                            ).configure_mark(aria=False)


def draws_table(spec: dict) -> bool:
    """Whether a chart's spec (altair's to_dict) is a template that draws the table sent beside it."""
    found = False

    def walk(node) -> None:
        nonlocal found
        if isinstance(node, dict):
            if node.get("data") == {"name": TABLE}:
                found = True
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return found


def position_labels(words) -> list[str]:
    """"01 the", "02 parcel", ...: distinct, ordered labels even when a word repeats."""
    width = max(2, len(str(len(words))))
    return [f"{i + 1:0{width}d} {w}" for i, w in enumerate(words)]


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


# --- Heatmaps of traces --------------------------------------------------------------------------


def heatmap_data(matrix: np.ndarray, rows: list[str], cols: list[str], value: str = "value") -> pd.DataFrame:
    """Tidy (row, column, value) table of a 2-D array, rows and columns kept in their given order."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.shape != (len(rows), len(cols)):
        raise ValueError(f"matrix {matrix.shape} does not match {len(rows)} rows x {len(cols)} columns")
    r, c = np.meshgrid(np.arange(len(rows)), np.arange(len(cols)), indexing="ij")
    return pd.DataFrame({"row": _labels(rows, r.ravel()), "column": _labels(cols, c.ravel()), value: matrix.ravel()})


def _labels(labels: list[str], codes: np.ndarray) -> pd.Categorical | np.ndarray:
    """labels[codes], as categories when the labels are distinct (position labels always are): Streamlit then
    sends each label to the browser once, not once per cell (5x fewer bytes for a heatmap of heads)."""
    if len(set(labels)) == len(labels):
        return pd.Categorical.from_codes(codes, pd.Index(labels, dtype=object))
    return np.asarray(labels, dtype=object)[codes]


def heatmap(*, value: str = "value", x: str = "column", y: str = "row", row_title: str = "", col_title: str = "",
            domain: tuple[float, float] | None = (0.0, 1.0), scheme: str = "blues", cell: int = 22, title: str = "",
            annotate: bool = False, only: str | None = None) -> alt.LayerChart:
    """A heatmap template of a tidy (y, x, value) table: rows top to bottom and columns left to right in the
    table's order, ``cell`` px per word, a tooltip on every cell. ``only``: draw just the table's rows whose
    "quantity" is that (one panel of a table of several)."""
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme, domainMid=0)
    base = alt.Chart().encode(
        x=alt.X(f"{x}:N", sort="ascending", title=col_title,
                axis=alt.Axis(labelOverlap=False, labelAngle=-50, labelLimit=160, orient="top")),
        y=alt.Y(f"{y}:N", sort="ascending", title=row_title, axis=alt.Axis(labelOverlap=False, labelLimit=160)),
    )
    # On its own, a short heatmap is shorter than a legend's usual 200 px, which the page would cut off: the
    # legend takes the heatmap's height (a panel of a concatenation has no "height" signal; its own is tall).
    legend = alt.Legend(orient="right") if only is not None else alt.Legend(
        orient="right", gradientLength=alt.ExprRef("clamp(height - 20, 40, 200)"))
    rect = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", scale=scale, title=value, legend=legend),
        tooltip=[alt.Tooltip(f"{y}:N", title=row_title or y), alt.Tooltip(f"{x}:N", title=col_title or x),
                 alt.Tooltip(f"{value}:Q", format=".3f")],
    )
    layers = [rect]
    if annotate:
        layers.append(base.mark_text(fontSize=10).encode(
            text=alt.Text(f"{value}:Q", format=".2f"),
            color=alt.condition(f"datum['{value}'] > 0.5", alt.value("white"), alt.value("black"))))
    chart = alt.layer(*layers, data=table()).properties(width=alt.Step(cell), height=alt.Step(cell))
    if only is not None:
        chart = chart.transform_filter(alt.datum.quantity == only)
    return chart.properties(title=title) if title else chart


def alignment_data(src_tokens: list[str], out_tokens: list[str], alignment: np.ndarray) -> pd.DataFrame:
    return heatmap_data(alignment, position_labels(out_tokens), position_labels(src_tokens), "weight")


# Numbers written in the cells of an alignment up to this many cells; beyond, they would not fit.
ANNOTATED_CELLS = 400


def alignment_annotated(src_tokens: list[str], out_tokens: list[str]) -> bool:
    """Whether an alignment of these words has room for its numbers in its cells."""
    return len(src_tokens) * len(out_tokens) <= ANNOTATED_CELLS


def alignment_chart(title: str = "", annotate: bool = True) -> alt.LayerChart:
    """Output words (rows) against source words (columns): where the decoder looked for each word it wrote
    (a template of ``alignment_data``)."""
    return _on_canvas(heatmap(value="weight", row_title="output word", col_title="source word", title=title,
                              annotate=annotate), f"{title or 'Alignment'}: a heatmap of attention weights")


GATE_FIELDS = (("forget gate f", "forget_gate", (0.0, 1.0), "blues"),
               ("input gate i", "input_gate", (0.0, 1.0), "greens"),
               ("output gate o", "output_gate", (0.0, 1.0), "purples"),
               ("cell state c", "cell", None, "redblue"))


def gates_data(trace, units: list[int] | None = None) -> pd.DataFrame:
    """One row per (quantity, unit, word) of an LSTMGateTrace, for ``units`` in that order (default: all)."""
    units = list(range(trace.forget_gate.shape[1])) if units is None else list(units)
    words = position_labels(trace.tokens)
    digits = max(2, len(str(trace.forget_gate.shape[1] - 1)))  # "unit 007" sorts before "unit 100"
    unit_names = [f"unit {u:0{digits}d}" for u in units]
    frames = []
    quantities = [(name, field) for name, field, _, _ in GATE_FIELDS] + [("candidate c̃", "candidate"),
                                                                         ("hidden h", "hidden")]
    for name, field in quantities:
        values = getattr(trace, field)[:, units].T  # (T, H) -> (units, T): units as rows, words as columns
        frame = heatmap_data(values, unit_names, words)
        frame.insert(0, "quantity", name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).rename(columns={"row": "unit", "column": "word"})


def gate_column_px(words: int) -> int:
    """Px per word in the gate heatmaps: wide for a short sentence, narrower so a long one fits."""
    return min(36, max(8, 720 // max(words, 1)))


def gates_chart(column: int = 36) -> alt.VConcatChart:
    """Heatmaps, units x words, of the forget, input and output gates and the cell state (a template of
    ``gates_data``; ``column``: px per word, from ``gate_column_px``)."""
    panels = [heatmap(value="value", x="word", y="unit", row_title="unit", domain=domain, scheme=scheme, cell=16,
                      title=name, only=name).properties(width=alt.Step(column))
              for name, _, domain, scheme in GATE_FIELDS]
    return _on_canvas(alt.vconcat(*panels).resolve_scale(color="independent"),
                      "Heatmaps of the forget, input and output gates and the cell state, unit by unit, word by word")


def unit_lines_data(trace, unit: int) -> pd.DataFrame:
    words = position_labels(trace.tokens)
    rows = []
    for name, field in (("forget gate f", "forget_gate"), ("input gate i", "input_gate"),
                        ("output gate o", "output_gate"), ("candidate c̃", "candidate"), ("cell state c", "cell"),
                        ("hidden h", "hidden")):
        for t, word in enumerate(words):
            rows.append({"word": word, "position": t + 1, "quantity": name,
                         "value": float(getattr(trace, field)[t, unit])})
    return pd.DataFrame(rows)


def unit_lines_chart() -> alt.LayerChart:
    """One unit's gates and memory across the sentence (a template of ``unit_lines_data``)."""
    colours = alt.Scale(domain=["forget gate f", "input gate i", "output gate o", "candidate c̃", "cell state c",
                                "hidden h"], range=[BLUE, GREEN, PURPLE, GREY, VERMILLION, ORANGE])
    base = alt.Chart().encode(
        x=alt.X("word:N", sort="ascending", title=None,
                axis=alt.Axis(labelOverlap=False, labelAngle=-50, labelLimit=160)),
        y=alt.Y("value:Q", title="value"),
        color=alt.Color("quantity:N", scale=colours, legend=alt.Legend(orient="bottom", title=None, columns=2)),
        tooltip=[alt.Tooltip("word:N"), alt.Tooltip("quantity:N"), alt.Tooltip("value:Q", format=".3f")],
    )
    return alt.layer(base.mark_line(), base.mark_point(filled=True, size=40), data=table()).properties(
        height=300, title="Its gates and memory across the sentence")


def mean_forget_data(trace) -> pd.DataFrame:
    return pd.DataFrame({"word": position_labels(trace.tokens), "mean forget gate": trace.forget_gate.mean(axis=1),
                         "mean input gate": trace.input_gate.mean(axis=1)})


def mean_forget_chart() -> alt.Chart:
    """The mean forget gate at each word (a template of ``mean_forget_data``)."""
    return alt.Chart(table()).mark_bar(color=BLUE).encode(
        x=alt.X("word:N", sort="ascending", title=None,
                axis=alt.Axis(labelOverlap=False, labelAngle=-50, labelLimit=160)),
        y=alt.Y("mean forget gate:Q", scale=alt.Scale(domain=[0, 1]), title="mean forget gate f (all units)"),
        tooltip=[alt.Tooltip("word:N"), alt.Tooltip("mean forget gate:Q", format=".3f"),
                 alt.Tooltip("mean input gate:Q", format=".3f")],
    ).properties(height=240, title="How much of the old memory each word keeps")


def attention_heads_data(tokens: list[str], weights: np.ndarray, queries: list[str] | None = None) -> pd.DataFrame:
    """(L, N, Tq, Tk) weights as a tidy table with layer, head, query word and key word."""
    weights = np.asarray(weights, dtype=float)
    layers, heads, n_queries, n_keys = weights.shape
    keys = position_labels(tokens)
    rows_labels = keys if queries is None else position_labels(queries)
    if (n_queries, n_keys) != (len(rows_labels), len(keys)):
        raise ValueError(f"weights {weights.shape} do not match {len(rows_labels)} x {len(keys)} words")
    layer, head, query, key = np.indices(weights.shape).reshape(4, -1)  # one entry per cell, in C order
    return pd.DataFrame({
        "layer": _labels([f"layer {i + 1}" for i in range(layers)], layer),
        "head": _labels([f"head {i + 1}" for i in range(heads)], head),
        "from word": _labels(rows_labels, query),
        "to word": _labels(keys, key),
        "weight": weights.ravel(),
    })


def heads_cell_px(words: int) -> int:
    """Px per word in the heads' heatmaps: four heads side by side fit the page's column (about 1000 px with
    labels and legend) up to 15 words; longer sentences keep 9 px, room for the 9 px labels, and scroll."""
    return max(9, min(12, 190 // max(words, 1)))


def attention_heads_chart(cell: int = 12, row_title: str = "word attending",
                          col_title: str = "word attended to") -> alt.FacetChart:
    """Small multiples: one heatmap per layer (rows) and head (columns) (a template of ``attention_heads_data``;
    ``cell``: px per word, from ``heads_cell_px``)."""
    cells = alt.Chart(table()).mark_rect().encode(
        # Axis titles would repeat under every head and overlap on a short sentence: the chart's title says it.
        x=alt.X("to word:N", sort="ascending", title=None,
                axis=alt.Axis(labelOverlap=False, labelAngle=-60, labelLimit=120, labelFontSize=9)),
        y=alt.Y("from word:N", sort="ascending", title=None,
                axis=alt.Axis(labelOverlap=False, labelLimit=120, labelFontSize=9)),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), legend=alt.Legend(orient="right")),
        tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("head:N"), alt.Tooltip("from word:N"), alt.Tooltip("to word:N"),
                 alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=alt.Step(cell), height=alt.Step(cell)).facet(
        row=alt.Row("layer:N", title=None), column=alt.Column("head:N", title=None),
    )
    title = f"Rows: {row_title}. Columns: {col_title}."
    return _on_canvas(cells.properties(title=title), f"Attention weights of every layer and head. {title}")


# --- Classifiers, gradients and timing ------------------------------------------------------------


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
    ).properties(height=32 * len(models) + 20 + LEGEND_ROW_PX, title=title)  # + the teams' legend's second line


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


def timing_data(rows) -> pd.DataFrame:
    return pd.DataFrame([{"sequence length T": r.length, "layer": r.layer, "milliseconds": r.milliseconds}
                         for r in rows])


def timing_chart(rows) -> alt.Chart:
    data = timing_data(rows)
    base = alt.Chart().encode(
        x=alt.X("sequence length T:Q", scale=alt.Scale(type="log", base=2), title="sequence length T (log scale)"),
        y=alt.Y("milliseconds:Q", scale=alt.Scale(type="log"), title="forward time, ms (log scale)"),
        color=alt.Color("layer:N", scale=alt.Scale(range=[VERMILLION, BLUE]),
                        legend=alt.Legend(orient="bottom", title=None, labelLimit=400, columns=1)),
        tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("sequence length T:Q"),
                 alt.Tooltip("milliseconds:Q", format=".2f")],
    )
    return alt.layer(base.mark_line(), base.mark_point(filled=True, size=50), data=data).properties(
        height=300, title="Forward time of one layer on a batch of 8, measured on this machine")


# --- Measured results from the zoo's metadata (JSON only, no torch) -------------------------------


def twins_data(metadata: dict[str, dict], colours: dict[str, str]) -> pd.DataFrame:
    rows = []
    for name in colours:
        metrics = metadata[name]["metrics"]
        rows.append({"model": name, "held-out set": "test emails", "accuracy": metrics["test_accuracy"]})
        rows.append({"model": name, "held-out set": "word-identical twins", "accuracy": metrics["twins_accuracy"]})
    return pd.DataFrame(rows)


def twins_chart(metadata: dict[str, dict], colours: dict[str, str]) -> alt.Chart:
    names = list(colours)
    data = twins_data(metadata, colours)
    base = alt.Chart(data).encode(
        y=alt.Y("model:N", sort=names, title=None, axis=alt.Axis(labelLimit=MODEL_LABEL_PX, labelOverlap=False)),
        x=alt.X("accuracy:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="accuracy"),
        yOffset=alt.YOffset("held-out set:N"),
        color=alt.Color("held-out set:N", scale=alt.Scale(range=[BLUE, ORANGE]),
                        legend=alt.Legend(orient="bottom", title=None, labelLimit=MODEL_LABEL_PX)),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("held-out set:N"), alt.Tooltip("accuracy:Q", format=".1%")],
    )
    text = base.mark_text(align="left", dx=3, fontSize=11).encode(text=alt.Text("accuracy:Q", format=".1%"),
                                                                   color=alt.value(LABEL_GREY))
    chance = alt.Chart(pd.DataFrame({"x": [0.5], "label": ["50%: one of each twin pair"]})).mark_rule(
        strokeDash=[4, 4], color=GREY).encode(x="x:Q", tooltip=[alt.Tooltip("label:N", title="")])
    return alt.layer(base.mark_bar(), text, chance).properties(
        height=44 * len(names), title="Held-out accuracy: ordinary emails and word-identical twins")


def memory_curve(meta: dict, step: int | None = None) -> dict[str, float]:
    """Accuracy by distance of a memory model after ``step`` training steps (None, or a model measured only
    when its training ended, as a visitor's: its final accuracy)."""
    metrics = meta["metrics"]
    if step is None or not metrics.get("learning_curve"):
        return metrics["accuracy_by_distance"]
    for point in metrics.get("learning_curve", []):
        if point["step"] == step:
            return point["accuracy_by_distance"]
    raise KeyError(f"no measurement after {step} steps")


def memory_data(metadata: dict[str, dict], colours: dict[str, str], step: int | None = None) -> pd.DataFrame:
    rows = []
    for name in colours:
        for distance, accuracy in memory_curve(metadata[name], step).items():
            rows.append({"model": name, "distance": int(distance), "accuracy": accuracy})
    return pd.DataFrame(rows)


def memory_accuracy_chart(colours: dict[str, str], chance: float) -> alt.LayerChart:
    """Held-out accuracy against distance, a line per model (a template of ``memory_data``), with chance and
    the chapter's twenty steps marked."""
    names = list(colours)
    base = alt.Chart().encode(
        x=alt.X("distance:Q", title="distance: words between the first word and the answer"),
        y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="held-out accuracy"),
        color=alt.Color("model:N", sort=names, scale=model_colours(colours), legend=model_legend()),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("distance:Q"), alt.Tooltip("accuracy:Q", format=".1%")],
    )
    marks = pd.DataFrame({"x": [20], "y": [chance], "label": [f"chance {chance:.1%}"]})
    rule20 = alt.Chart(marks).mark_rule(strokeDash=[4, 4], color=GREY).encode(
        x="x:Q", tooltip=[alt.Tooltip("x:Q", title="the chapter's twenty steps back")])
    chance_rule = alt.Chart(marks).mark_rule(strokeDash=[2, 2], color=GREY).encode(
        y=alt.Y("y:Q", title=None), tooltip=[alt.Tooltip("label:N", title="guessing")])
    chance_text = alt.Chart(marks).mark_text(align="left", dx=4, dy=-6, color=GREY).encode(
        x=alt.value(4), y=alt.Y("y:Q", title=None), text="label:N")
    return alt.layer(alt.layer(base.mark_line(strokeWidth=2.5), data=table()), rule20, chance_rule,
                     chance_text).properties(
        height=300, title="Remember the first word: held-out accuracy against distance")


def translation_by_length_data(metadata: dict[str, dict], colours: dict[str, str]) -> pd.DataFrame:
    rows = []
    for name in colours:
        for bucket, values in metadata[name]["metrics"]["buckets"].items():
            lo, hi = (int(x) for x in bucket.split("-"))
            for metric in ("exact_match", "token_accuracy"):
                if values.get(metric) is not None:
                    rows.append({"model": name, "source length": bucket, "middle": (lo + hi) / 2,
                                 "metric": metric.replace("_", " "), "value": values[metric], "n": values["n"]})
    return pd.DataFrame(rows)


def translation_by_length_chart(metadata: dict[str, dict], colours: dict[str, str], metric: str = "exact match"):
    names = list(colours)
    data = translation_by_length_data(metadata, colours)
    data = data[data["metric"] == metric]
    limit = metadata[names[0]]["metrics"]["max_train_src_len"]
    base = alt.Chart(data).encode(
        x=alt.X("middle:Q", title="source sentence length (tokens, bucket middle)"),
        y=alt.Y("value:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title=metric),
        color=alt.Color("model:N", sort=names, scale=model_colours(colours), legend=model_legend()),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("source length:N"), alt.Tooltip("value:Q", format=".1%"),
                 alt.Tooltip("n:Q", title="sentences")],
    )
    rule = alt.Chart(pd.DataFrame({"x": [limit + 0.5], "label": [f"longest training sentence: {limit} tokens"]}))
    limit_marks = rule.mark_rule(strokeDash=[5, 4], color=GREY).encode(
        x="x:Q", tooltip=[alt.Tooltip("label:N", title="")]) + rule.mark_text(
        align="right", dx=-6, color=GREY).encode(x="x:Q", y=alt.datum(0.05), text="label:N")
    return alt.layer(base.mark_line(strokeWidth=2.5), base.mark_point(filled=True, size=45), limit_marks).properties(
        height=320, title=f"Held-out {metric} against source length")


def throughput_data(metadata: dict[str, dict], names: list[str]) -> pd.DataFrame:
    rows = []
    for name in names:
        meta = metadata[name]
        sentences = meta["steps"] * meta["train"]["batch_size"]
        rows.append({"model": name, "training seconds": meta["train_seconds"], "steps": meta["steps"],
                     "sentence pairs per second": sentences / meta["train_seconds"]})
    return pd.DataFrame(rows)


def throughput_chart(metadata: dict[str, dict], names: list[str]) -> alt.Chart:
    data = throughput_data(metadata, names)
    base = alt.Chart().encode(
        y=alt.Y("model:N", sort=names, title=None, axis=alt.Axis(labelLimit=220)),
        x=alt.X("sentence pairs per second:Q", title="sentence pairs per second (one thread)",
                scale=alt.Scale(domainMax=float(data["sentence pairs per second"].max()) * 1.15)),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("sentence pairs per second:Q", format=".0f"),
                 alt.Tooltip("training seconds:Q", format=".0f"), alt.Tooltip("steps:Q")],
    )
    return alt.layer(base.mark_bar(color=BLUE), base.mark_text(align="left", dx=3, color=LABEL_GREY).encode(
        text=alt.Text("sentence pairs per second:Q", format=".0f")), data=data).properties(
        height=40 * len(names), title="Training throughput of the shipped translators, measured here")


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


# --- Training in the app ---------------------------------------------------------------------------

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
