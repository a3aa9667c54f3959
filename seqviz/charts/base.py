"""Chart transport and the conventions every chart shares: the table a template draws (``TABLE``, ``table()``),
the canvas that heatmaps draw on, position labels for words, legends and titles that fit a phone."""

from __future__ import annotations

import textwrap

import altair as alt

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


# A phone: a screen at most 640 px wide (Streamlit's own breakpoint). There a chart gets the page's one column, 358 px
# of a 390 px screen; a template with a phone form (``phone=True``, marked by :func:`has_phone_form`) fits it, its
# heatmaps' words wrapped into blocks one above the other instead of a box that scrolls sideways.
PHONE_CHART_PX = 350  # the column less a margin
PHONE_FONT_PX = 11  # the smallest label or number on a phone: 75% of its 14 px body text or more
# An axis's text on a phone. Streamlit's theme sets labelFlushOffset 1: an axis's end labels 1 px past the plot's
# ends, and a chart as wide as the column (or whose plot ends at its edge) had its last label cut there ("1.00").
PHONE_AXIS_FONT = {"labelFontSize": PHONE_FONT_PX, "titleFontSize": PHONE_FONT_PX, "labelFlushOffset": 0}
PHONE_LABEL_PX = 96  # the most a word's label takes beside its row ("11 supposed" takes about 60)
# A phone form's canvas grows down, not across: about 300 px² a cell with its labels, drawn at 3 device pixels a px.
# Past this many cells (a table's rows) it would outgrow what a phone's browser draws on one canvas (iOS Safari:
# 16.7 M pixels; Chrome: 32,767 pixels high), and the chart keeps its desktop form, which scrolls sideways. 8 heads
# of 27 words fit (5,832 cells), of 60 they would not (28,800); 16 units' gates fit any sentence (6 x 16 x 60).
PHONE_MAX_CELLS = 6000


def has_phone_form(template=None, *, max_rows: int | None = PHONE_MAX_CELLS):
    """Mark a template that takes ``phone=True`` (seqviz.ui draws that form on a narrow screen, for a table of at
    most ``max_rows`` rows; None: any, for a chart whose size does not grow with its table, a histogram's)."""

    def mark(template):
        template.phone_form, template.phone_max_rows = True, max_rows
        return template

    return mark if template is None else mark(template)


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


# Room for a model's name on an axis or in a legend: a visitor's run is named up to 48 characters + " (yours)".
MODEL_LABEL_PX = 360


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


def side_by_side(build, count: int, width: int, phone: bool, per_row: int = 2, words_each: bool = False,
                 spacing: int | None = 12) -> alt.HConcatChart | alt.VConcatChart:
    """Bar panels that share their words down the side, side by side.

    ``build(number, words, x_axis, width)`` makes panel ``number``: ``words`` are its words' alt.Axis settings (None:
    no labels, the panel to its left has them), ``x_axis`` its value axis's settings beyond the desktop's, ``width``
    its px. On a desktop: one row, ``width`` each, the words on the left only (``words_each``: beside every panel;
    ``spacing`` px apart, None: Vega-Lite's). On a phone: ``per_row`` a row, each row with its words, sized to a
    phone's column, its text PHONE_FONT_PX (the rows one under the other, where a desktop's went on to the right)."""
    if not phone:
        words = {"labelOverlap": False, "labelLimit": 160}
        return alt.hconcat(*[build(number, words if number == 0 or words_each else None, {}, width)
                             for number in range(count)], **({} if spacing is None else {"spacing": spacing}))
    width = (PHONE_CHART_PX - PHONE_LABEL_PX - 12 * (per_row - 1)) // per_row
    font = PHONE_AXIS_FONT
    words = {"labelOverlap": False, "labelLimit": PHONE_LABEL_PX, **font}
    values = {"tickCount": 3, "format": "~g", **font}  # three ticks: more ran into each other in 120 px
    panels = [build(number, words if number % per_row == 0 else None, values, width) for number in range(count)]
    return alt.vconcat(*[alt.hconcat(*panels[start:start + per_row], spacing=12)
                         for start in range(0, count, per_row)], spacing=16)


def phone_title(title: str, width: int) -> str | list[str]:
    """An axis title that fits ``width`` px at PHONE_FONT_PX: broken into lines (Vega draws a list as lines)."""
    lines = textwrap.wrap(title, max(8, width // 6))
    return lines if len(lines) > 1 else title


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


# Smallest magnitude drawn on a log axis; below it a value is reported as 0.
LOG_FLOOR = 1e-300
