"""An LSTM's gates: heatmaps of every unit, one unit's gates and memory as lines, the mean forget gate."""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts.base import _on_canvas, has_phone_form, position_labels, table
from seqviz.charts.colours import BLUE, GREEN, GREY, ORANGE, PURPLE, VERMILLION
from seqviz.charts.figure import Figure, drawn, figure
from seqviz.charts.heatmaps import heatmap, heatmap_data

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


# A phone's gate columns: square cells, so 16 words fit beside the units' labels ("unit 07").
PHONE_GATE_COLUMN_PX = 16


@has_phone_form
def gates_chart(column: int = 36, phone: bool = False) -> alt.VConcatChart:
    """Heatmaps, units x words, of the forget, input and output gates and the cell state (a template of
    ``gates_data``; ``column``: px per word, from ``gate_column_px``). ``phone``: PHONE_GATE_COLUMN_PX a word, a
    longer sentence's words in blocks, each colour scale above its heatmap (see ``heatmap``)."""
    phone_form = {"phone": True, "column": PHONE_GATE_COLUMN_PX, "label_px": 60} if phone else {"column": column}
    panels = [heatmap(value="value", x="word", y="unit", row_title="unit", domain=domain, scheme=scheme, cell=16,
                      title=name, only=name, **phone_form)
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


@figure("gates")
def gates(trace, units: list[int] | None = None) -> Figure:
    """Heatmaps of f_t, i_t, o_t and c_t for the ``units`` (None: all) at every word."""
    return drawn(gates_chart, gates_data(trace, units), gate_column_px(len(trace.tokens)))


@figure("unit-lines")
def unit_lines(trace, unit: int) -> Figure:
    """One unit's gates and memory across the sentence."""
    return drawn(unit_lines_chart, unit_lines_data(trace, unit))


@figure("mean-forget")
def mean_forget(trace) -> Figure:
    """The mean forget gate at each word: how much of its memory each word keeps."""
    return drawn(mean_forget_chart, mean_forget_data(trace))
