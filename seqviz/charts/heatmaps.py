"""Heatmaps of traces: the heatmap template, where a translator looked (alignment), a transformer's heads."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.base import (
    PHONE_CHART_PX,
    PHONE_FONT_PX,
    PHONE_LABEL_PX,
    _on_canvas,
    has_phone_form,
    position_labels,
    table,
)
from seqviz.charts.figure import Figure, drawn, figure


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


# A phone's axis labels: PHONE_FONT_PX, close to their cells (Streamlit's theme puts them 16 px off), each beside
# its own row (its theme's labelFlush moved the first row's label down onto the second's).
_PHONE_AXIS = {"labelFontSize": PHONE_FONT_PX, "labelFlush": False, "labelPadding": 4}
# A phone's colour scale: above the chart, across, where it stays in view (at the right, it was off the screen).
_PHONE_LEGEND = alt.Legend(orient="top", direction="horizontal", gradientLength=160, labelFontSize=PHONE_FONT_PX,
                           titleFontSize=PHONE_FONT_PX)
_AXIS_PX = 12  # beside a block's row labels: the axis' ticks and padding
_TITLE_PX = 20  # and its title, when it has one


def heatmap(*, value: str = "value", x: str = "column", y: str = "row", row_title: str = "", col_title: str = "",
            domain: tuple[float, float] | None = (0.0, 1.0), scheme: str = "blues", cell: int = 22, title: str = "",
            annotate: bool = False, only: str | None = None, column: int | None = None, phone: bool = False,
            label_px: int = PHONE_LABEL_PX) -> alt.LayerChart | alt.FacetChart:
    """A heatmap template of a tidy (y, x, value) table: rows top to bottom and columns left to right in the
    table's order, ``cell`` px per word (``column`` px wide, default ``cell``), a tooltip on every cell. ``only``:
    draw just the table's rows whose "quantity" is that (one panel of a table of several). ``phone``: its form for
    a phone, its columns wrapped into blocks one above the other (``in_blocks``; row labels up to ``label_px``),
    the colour scale on top, labels of PHONE_FONT_PX."""
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme, domainMid=0)
    if annotate:  # "0.47" at 11 px (a phone's body text is 14 px: its numbers at 75% of that or more) fits 26 px
        cell = max(cell, 26)
    column = column or cell
    font = {**_PHONE_AXIS, "titleFontSize": PHONE_FONT_PX} if phone else {}
    base = alt.Chart().encode(
        x=alt.X(f"{x}:N", sort="ascending", title=col_title,
                axis=alt.Axis(labelOverlap=False, labelAngle=-50, labelLimit=PHONE_LABEL_PX if phone else 160,
                              orient="top", **font)),
        y=alt.Y(f"{y}:N", sort="ascending", title=row_title,
                axis=alt.Axis(labelOverlap=False, labelLimit=label_px if phone else 160, **font)),
    )
    if phone:
        legend = _PHONE_LEGEND
    else:  # On its own, a short heatmap is shorter than a legend's usual 200 px, which the page would cut off: the
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
        layers.append(base.mark_text(fontSize=11).encode(
            text=alt.Text(f"{value}:Q", format=".2f"),
            color=alt.condition(f"datum['{value}'] > 0.5", alt.value("white"), alt.value("black"))))
    if phone:
        chart = alt.layer(*layers).properties(width=alt.Step(column), height=alt.Step(cell))
        if only is not None:
            chart = chart.transform_filter(alt.datum.quantity == only)
        chart = in_blocks(chart, x, phone_columns(column, label_px + (_TITLE_PX if row_title else 0)))
    else:
        chart = alt.layer(*layers, data=table()).properties(width=alt.Step(column), height=alt.Step(cell))
        if only is not None:
            chart = chart.transform_filter(alt.datum.quantity == only)
    return chart.properties(title=title) if title else chart


def phone_columns(column: int, label_px: int = PHONE_LABEL_PX) -> int:
    """How many columns of ``column`` px one block of a phone's heatmap holds beside row labels of ``label_px``."""
    return max(1, (PHONE_CHART_PX - label_px - _AXIS_PX) // column)


def in_blocks(chart, x: str, per_block: int, panel: str | None = None, order: str | None = None) -> alt.FacetChart:
    """``chart`` (a template without its data) on a phone: its columns ``x``, in their sorted order, wrapped into
    blocks of at most ``per_block``, as even as can be, one above the other, each block named by its words ("words
    9–16") and with its own row and column labels, so nothing scrolls sideways. Each word's block is computed in
    the browser (Vega's dense_rank of ``x``): the table sent, and its CSV, stay as they are, and the template serves
    any sentence.

    ``panel`` and ``order``: Vega expressions of the name and the place of a panel, when the chart is a grid of
    panels (a layer and head) and each panel's blocks follow it ("layer 1 · head 2", then "· words 1–16" when
    it needs several)."""
    faceted = chart.facet(
        row=alt.Row("panel:N", sort=alt.EncodingSortField(field="order", op="min"), title=None,
                    header=alt.Header(labelOrient="top", labelAngle=0, labelAnchor="start", labelFontSize=12,
                                      labelFontWeight="bold", labelPadding=4)),
        data=table(), spacing=12,
    )
    first, last = "datum.block * datum.per + 1", "min(datum.block * datum.per + datum.per, datum.places)"
    words = f"({first} == {last} ? 'word ' + ({first}) : 'words ' + ({first}) + '–' + ({last}))"
    return faceted.transform_window(
        place="dense_rank()", sort=[alt.SortField(x, order="ascending")]
    ).transform_joinaggregate(places="max(place)").transform_calculate(
        per=f"ceil(datum.places / ceil(datum.places / {per_block}))"  # 17 words in blocks of 8: 6, 6 and 5
    ).transform_calculate(block="floor((datum.place - 1) / datum.per)").transform_calculate(
        # a lone block of a plain heatmap is not named ("words 1–15" says nothing the labels do not)
        panel=f"{panel} + (datum.places > datum.per ? ' · ' + {words} : '')" if panel
        else f"datum.places > datum.per ? {words} : ''",
        order=f"({order}) * 1000 + datum.block" if order else "datum.block",
    ).resolve_scale(x="independent")


def alignment_data(src_tokens: list[str], out_tokens: list[str], alignment: np.ndarray) -> pd.DataFrame:
    return heatmap_data(alignment, position_labels(out_tokens), position_labels(src_tokens), "weight")


# Numbers written in the cells of an alignment up to this many cells; beyond, they would not fit.
ANNOTATED_CELLS = 400


def alignment_annotated(src_tokens: list[str], out_tokens: list[str]) -> bool:
    """Whether an alignment of these words has room for its numbers in its cells."""
    return len(src_tokens) * len(out_tokens) <= ANNOTATED_CELLS


@has_phone_form
def alignment_chart(title: str = "", annotate: bool = True, phone: bool = False) -> alt.LayerChart | alt.FacetChart:
    """Output words (rows) against source words (columns): where the decoder looked for each word it wrote
    (a template of ``alignment_data``; ``phone``: its source words in blocks, see ``heatmap``)."""
    chart = heatmap(value="weight", row_title="output word", col_title="source word", title=title, annotate=annotate,
                    phone=phone)
    return _on_canvas(chart, f"{title or 'Alignment'}: a heatmap of attention weights")


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


# A phone's heads: one head to a line, 14 px a word (its 11 px labels need 12), so 17 words fit beside their labels.
PHONE_HEAD_CELL_PX = 14


@has_phone_form
def attention_heads_chart(cell: int = 12, row_title: str = "word attending", col_title: str = "word attended to",
                          phone: bool = False) -> alt.FacetChart:
    """Small multiples: one heatmap per layer (rows) and head (columns) (a template of ``attention_heads_data``;
    ``cell``: px per word, from ``heads_cell_px``). ``phone``: one head under the other, PHONE_HEAD_CELL_PX a word,
    a longer sentence's words in blocks (``in_blocks``), the colour scale on top."""
    font = {**_PHONE_AXIS, "labelLimit": PHONE_LABEL_PX} if phone else {"labelFontSize": 9, "labelLimit": 120}
    cell = PHONE_HEAD_CELL_PX if phone else cell
    cells = (alt.Chart() if phone else alt.Chart(table())).mark_rect().encode(
        # Axis titles would repeat under every head and overlap on a short sentence: the chart's title says it.
        x=alt.X("to word:N", sort="ascending", title=None,
                axis=alt.Axis(labelOverlap=False, labelAngle=-60, **font, **({"orient": "top"} if phone else {}))),
        y=alt.Y("from word:N", sort="ascending", title=None, axis=alt.Axis(labelOverlap=False, **font)),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]),
                        legend=_PHONE_LEGEND if phone else alt.Legend(orient="right")),
        tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("head:N"), alt.Tooltip("from word:N"), alt.Tooltip("to word:N"),
                 alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=alt.Step(cell), height=alt.Step(cell))
    if phone:
        number = "toNumber(split(datum['{}'], ' ')[1])"
        cells = in_blocks(cells, "to word", phone_columns(cell), panel="datum.layer + ' · ' + datum.head",
                          order=f"{number.format('layer')} * 100 + {number.format('head')}")
    else:
        cells = cells.facet(row=alt.Row("layer:N", title=None), column=alt.Column("head:N", title=None))
    title = f"Rows: {row_title}. Columns: {col_title}."
    return _on_canvas(cells.properties(title=title), f"Attention weights of every layer and head. {title}")


@figure("alignment")
def alignment(src_tokens: list[str], out_tokens: list[str], weights: np.ndarray, title: str = "") -> Figure:
    """A translator's alignment: output word (row) × source word (column), each row adding to 1."""
    return drawn(alignment_chart, alignment_data(src_tokens, out_tokens, weights), title=title,
                 annotate=alignment_annotated(src_tokens, out_tokens))


@figure("attention-heads")
def attention_heads(tokens: list[str], weights: np.ndarray, queries: list[str] | None = None, **titles) -> Figure:
    """Every layer and head's attention (weights: layers × heads × queries × keys), cells sized to the words."""
    return drawn(attention_heads_chart, attention_heads_data(tokens, weights, queries), heads_cell_px(len(tokens)),
                 **titles)
