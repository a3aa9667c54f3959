"""Heatmaps on a phone (issue 27): their words wrap into blocks one above the other, so none scrolls sideways and
its colour scale and row labels stay in view; the table sent, and its CSV, are the desktop's.

Each phone form is checked against Vega-Lite's schema (altair's to_json) and drawn by vl-convert (offline) with a
16-word sentence's table: its width fits a phone's column, its text is 11 px or more, its blocks are named."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
import vl_convert as vlc

from seqviz import charts
from seqviz.charts.attention import step_chart, step_data
from seqviz.charts.base import PHONE_CHART_PX, PHONE_FONT_PX, TABLE, draws_table
from seqviz.charts.explain import (
    ATTENTION,
    MEASURE_NAMES,
    importance_chart,
    importance_data,
    pronoun_chart,
    pronoun_data,
    tau_chart,
    tau_data,
)
from seqviz.charts.gates import gate_column_px, gates_chart, gates_data
from seqviz.charts.heatmaps import (
    alignment_chart,
    alignment_data,
    attention_heads_chart,
    attention_heads_data,
    heads_cell_px,
    phone_columns,
)
from seqviz.traces import LSTMGateTrace

WORDS = "the charger arrived , but never the parcel that was supposed to have it at last .".split()  # 17 words
FRENCH = "le chargeur est arrivé , mais jamais le colis qui devait le contenir .".split()
COLUMN_PX = 358  # a 390 px phone's main column (Streamlit's), where a chart is drawn


def _drawn(chart, table) -> str:
    """The chart's SVG as vl-convert draws it with ``table`` as its data (schema-checked first)."""
    spec = json.loads(chart.to_json())  # validates against Vega-Lite's schema
    assert draws_table(spec)
    spec["datasets"] = {**spec.get("datasets", {}), TABLE: json.loads(table.to_json(orient="records"))}
    return vlc.vegalite_to_svg(spec)


def _width(svg: str) -> float:
    return float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))


def _font_sizes(svg: str) -> set[float]:
    return {float(size) for size in re.findall(r'font-size="([\d.]+)px"', svg)}


def _gate_trace(tokens, hidden=32, seed=0) -> LSTMGateTrace:
    rng = np.random.default_rng(seed)
    t = len(tokens)
    gate = lambda: rng.uniform(0, 1, (t, hidden))  # noqa: E731
    return LSTMGateTrace(tokens, gate(), gate(), gate(), rng.uniform(-1, 1, (t, hidden)),
                         rng.normal(size=(t, hidden)), rng.uniform(-1, 1, (t, hidden)))


def test_the_templates_with_a_phone_form_are_the_heatmaps_and_the_word_panels():
    import importlib
    import pkgutil

    marked = set()
    for module in pkgutil.iter_modules(charts.__path__):
        found = vars(importlib.import_module(f"seqviz.charts.{module.name}"))
        marked |= {name for name, value in found.items() if callable(value) and getattr(value, "phone_form", False)}
    assert marked == {"alignment_chart", "attention_heads_chart", "gates_chart", "pronoun_chart",
                      "importance_chart", "step_chart", "tau_chart"}
    # and their figures draw them
    heads = np.full((1, 1, 2, 2), 0.5)
    assert charts.make("alignment", ["a", "b"], ["x"], np.full((1, 2), 0.5)).make is alignment_chart
    assert charts.make("attention-heads", ["a", "b"], heads).make is attention_heads_chart
    assert charts.make("gates", _gate_trace(["a", "b"], hidden=3)).make is gates_chart
    assert charts.make("importance", ["a", "b"], None, {"gradient": np.ones(2)}).make is importance_chart
    step = SimpleNamespace(scores=np.zeros(2), weights=np.full(2, 0.5))
    assert charts.make("attention-step", step, ["a", "b"]).make is step_chart


def test_a_phone_alignment_wraps_its_source_words_into_blocks():
    table = alignment_data(WORDS, FRENCH, np.random.default_rng(1).dirichlet(np.ones(len(WORDS)), len(FRENCH)))
    svg = _drawn(alignment_chart("additive: output word (row) × source word (column)", True, phone=True), table)
    assert _width(svg) <= COLUMN_PX
    assert min(_font_sizes(svg)) >= PHONE_FONT_PX  # the numbers in the cells and every label
    # 17 words, at most 8 a block beside their row labels: three even blocks, not 8 + 8 + 1
    assert phone_columns(26, 116) == 8
    assert re.findall(r">(words [\d–]+)<", svg) == ["words 1–6", "words 7–12", "words 13–17"]
    assert svg.count(">01 le<") == 3  # every block has its own row labels
    assert svg.count(">0.") >= len(WORDS) * len(FRENCH)  # every cell keeps its number


def test_a_short_sentence_stays_one_unnamed_block():
    table = alignment_data(WORDS[:5], FRENCH[:4], np.full((4, 5), 0.2))
    svg = _drawn(alignment_chart(phone=True), table)
    assert "words 1" not in svg and svg.count(">01 le<") == 1


@pytest.mark.parametrize("queries", [None, FRENCH])
def test_phone_heads_stand_one_under_the_other(queries):
    """Self-attention (words × words) and cross-attention (French × English): one head to a line, named."""
    rows = len(queries or WORDS)
    weights = np.random.default_rng(2).dirichlet(np.ones(len(WORDS)), size=(2, 4, rows))
    table = attention_heads_data(WORDS, weights, queries)
    svg = _drawn(attention_heads_chart(heads_cell_px(len(WORDS)), phone=True), table)
    assert _width(svg) <= COLUMN_PX
    assert min(_font_sizes(svg)) >= PHONE_FONT_PX
    names = re.findall(r">(layer \d · head \d[^<]*)<", svg)
    assert names == [f"layer {layer} · head {head}" for layer in (1, 2) for head in (1, 2, 3, 4)]
    longer = WORDS * 2  # 34 words: each head in two blocks, in order
    table = attention_heads_data(longer, np.full((1, 2, len(longer), len(longer)), 1 / len(longer)))
    svg = _drawn(attention_heads_chart(9, phone=True), table)
    assert re.findall(r">(layer \d · head \d[^<]*)<", svg) == [
        "layer 1 · head 1 · words 1–17", "layer 1 · head 1 · words 18–34",
        "layer 1 · head 2 · words 1–17", "layer 1 · head 2 · words 18–34"]


def test_phone_gates_fit_sixteen_words_in_one_block():
    trace = _gate_trace(WORDS[:16])
    svg = _drawn(gates_chart(gate_column_px(16), phone=True), gates_data(trace, list(range(16))))
    assert _width(svg) <= COLUMN_PX
    assert min(_font_sizes(svg)) >= PHONE_FONT_PX
    assert "words 1" not in svg  # one block each: nothing to name
    for title in ("forget gate f", "input gate i", "output gate o", "cell state c"):
        assert f">{title}<" in svg
    trace = _gate_trace(WORDS)  # 17 words: two blocks of each panel
    svg = _drawn(gates_chart(gate_column_px(17), phone=True), gates_data(trace, list(range(16))))
    assert re.findall(r">(words [\d–]+)<", svg) == ["words 1–9", "words 10–17"] * 4


def test_the_phone_form_changes_the_chart_not_its_table_or_the_desktop_form():
    """The blocks are computed by the browser: the figure's table is the desktop's, and the desktop's template is
    built as before (no ``phone`` argument reaches it)."""
    figure = charts.make("alignment", WORDS, FRENCH, np.full((len(FRENCH), len(WORDS)), 1 / len(WORDS)), "t")
    assert "phone" not in figure.kwargs
    desktop = json.loads(figure.make(*figure.args, **figure.kwargs).to_json())
    phone = json.loads(figure.make(*figure.args, **figure.kwargs, phone=True).to_json())
    assert "layer" in desktop and "facet" not in desktop
    assert phone["facet"]["row"]["field"] == "panel" and phone["resolve"]["scale"]["x"] == "independent"
    assert phone["data"] == {"name": TABLE}
    assert phone["spec"]["layer"][1]["mark"]["fontSize"] >= PHONE_FONT_PX
    assert PHONE_CHART_PX <= COLUMN_PX


def test_phone_pronoun_heatmap_wraps_its_words_beside_every_head():
    """/explain's "Where “it” looks": a row per layer and head, 17 words wrapped into blocks on a phone."""
    weights = np.random.default_rng(3).dirichlet(np.ones(len(WORDS)), size=(2, 4))
    svg = _drawn(pronoun_chart("it", phone=True), pronoun_data(WORDS, weights, "it"))
    assert _width(svg) <= COLUMN_PX
    assert min(_font_sizes(svg)) >= PHONE_FONT_PX
    blocks = re.findall(r">(words [\d–]+)<", svg)
    assert len(blocks) >= 2 and blocks[0].startswith("words 1–") and blocks[-1].endswith("–17")
    assert svg.count(">layer 2, head 4<") == len(blocks)  # every block has its own row labels


def _measures(seed=4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    measures = {ATTENTION: rng.dirichlet(np.ones(len(WORDS))), MEASURE_NAMES["gradient"]: rng.uniform(0, 2, len(WORDS))}
    return measures | {MEASURE_NAMES[m]: rng.normal(size=len(WORDS))
                       for m in ("gradient_x_input", "integrated_gradients", "leave_one_out")}


def test_phone_importance_panels_go_two_a_row_each_row_with_its_words():
    """/explain's "which words mattered": five panels of 17 words; on a phone two a row, three rows, each with the
    words on its left, every title whole (the long ones in lines), nothing past the column."""
    measures = _measures()
    svg = _drawn(importance_chart(tuple(measures), "Which words mattered", phone=True),
                 importance_data(WORDS, measures))
    assert _width(svg) <= COLUMN_PX
    assert min(_font_sizes(svg)) >= PHONE_FONT_PX
    assert svg.count(">01 the<") == 3 and svg.count(">17 .<") == 3  # each row's words
    assert ">attention α<" in svg and ">integrated gradients<" in svg
    assert ">leave-one-out drop<" in svg or ">leave-one-out drop in<" in svg  # broken into lines, not cut with "…"
    assert "…" not in svg
    desktop = _drawn(importance_chart(tuple(measures), "Which words mattered"), importance_data(WORDS, measures))
    assert _width(desktop) > COLUMN_PX and desktop.count(">01 the<") == 1  # the desktop's one row, unchanged


def test_phone_attention_step_shows_the_words_once_beside_both_panels():
    rng = np.random.default_rng(5)
    step = SimpleNamespace(scores=rng.normal(size=len(WORDS)), weights=rng.dirichlet(np.ones(len(WORDS))))
    table = step_data(step, WORDS)
    svg = _drawn(step_chart("score_j = vᵀ tanh(W s_{t-1} + U h_j)", phone=True), table)
    assert _width(svg) <= COLUMN_PX
    assert min(_font_sizes(svg)) >= PHONE_FONT_PX
    assert svg.count(">11 supposed<") == 1 and ">② softmax weight α<" in svg and "…" not in svg
    desktop = _drawn(step_chart("score_j = vᵀ tanh(W s_{t-1} + U h_j)"), table)
    assert desktop.count(">11 supposed<") == 2  # the desktop's words beside each panel, as before


def test_phone_held_out_taus_put_each_histogram_on_a_row_of_its_own():
    rng = np.random.default_rng(6)
    comparisons = ("attention vs gradient ‖∂ log p / ∂e‖", "attention vs leave-one-out drop in log p")
    taus = {model: {comparison.removeprefix("attention vs "): {"tau": list(rng.uniform(-1, 1, 40)),
                                                                "weighted_tau": list(rng.uniform(-1, 1, 40))}
                    for comparison in comparisons}
            for model in ("additive attention translator", "dot-product attention translator")}
    colours = {"additive attention translator": "#0072B2", "dot-product attention translator": "#E69F00"}
    phone = tau_chart(colours, comparisons, phone=True)
    svg = _drawn(phone, tau_data(taus))
    assert _width(svg) <= COLUMN_PX
    assert min(_font_sizes(svg)) >= PHONE_FONT_PX
    assert len(json.loads(phone.to_json())["vconcat"]) == 4  # two comparisons x (τ, weighted τ), one a row
    assert "…" not in svg and ">dot-product attention translator<" in svg
    assert _width(_drawn(tau_chart(colours, comparisons), tau_data(taus))) > COLUMN_PX  # the desktop's two a row
