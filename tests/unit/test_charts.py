import json

import numpy as np
import pytest

from seqviz import families
from seqviz.analysis import attention_example as ex
from seqviz.analysis import tiny_rnn
from seqviz.charts.base import TITLE_LINE_CHARS, draws_table, legend_rows, position_labels, wrap_titles
from seqviz.charts.colours import GREY, YOUR_COLOURS, model_colour
from seqviz.charts.gates import (
    gate_column_px,
    gates_chart,
    gates_data,
    mean_forget_chart,
    mean_forget_data,
    unit_lines_chart,
    unit_lines_data,
)
from seqviz.charts.gradients import jacobian_chart, jacobian_data, saliency_chart
from seqviz.charts.heatmaps import (
    alignment_chart,
    alignment_data,
    attention_heads_chart,
    attention_heads_data,
    heads_cell_px,
    heatmap_data,
)
from seqviz.charts.metrics import memory_accuracy_chart
from seqviz.charts.worked import (
    attention_steps_data,
    attention_weights_chart,
    context_mix_chart,
    context_mix_data,
    gradient_chart,
    gradient_data,
    memory_chart,
    tiny_rnn_data,
)


def _spec(chart) -> dict:
    return json.loads(chart.to_json())


def test_position_labels_keep_repeated_words_apart():
    assert position_labels(["the", "box", "the"]) == ["01 the", "02 box", "03 the"]
    assert position_labels(["w"] * 120)[99] == "100 w"


def test_memory_chart_holds_every_step():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(6))
    data = tiny_rnn_data(run)
    assert list(data["step"]) == [1, 2, 3, 4, 5, 6]
    spec = _spec(memory_chart())
    assert "tooltip" in json.dumps(spec)


def test_gradient_chart_drops_only_zeros_from_the_log_axis():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(8), w=0.0)  # every factor is exactly 0
    data = gradient_data(run)
    assert not data["drawn"].any()
    gradient_chart().to_json()  # still a valid chart (the reference point)
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(8), w=0.5)
    assert gradient_data(run)["drawn"].all()


def test_attention_tables_match_the_worked_example():
    worked = ex.worked_attention(ex.CHAPTER_QUERY, ex.CHAPTER_KEYS, ex.CHAPTER_WORDS)
    table = attention_steps_data(worked)
    assert list(table["word"]) == ["parcel", "never", "arrived"]
    np.testing.assert_allclose(table["weight α"], worked.weights)
    mix = context_mix_data(worked)
    added = mix[mix["part"] == "α × key, added"]
    # the weighted keys laid head to tail end exactly at the context vector
    np.testing.assert_allclose(added[["x2", "y2"]].iloc[-1], worked.context)
    attention_weights_chart(worked).to_json()
    context_mix_chart(worked).to_json()


def _gate_trace(tokens, hidden=5, seed=0):
    from seqviz.traces import LSTMGateTrace

    rng = np.random.default_rng(seed)
    t = len(tokens)
    gate = lambda: rng.uniform(0, 1, (t, hidden))  # noqa: E731
    return LSTMGateTrace(tokens, gate(), gate(), gate(), rng.uniform(-1, 1, (t, hidden)),
                         rng.normal(size=(t, hidden)), rng.uniform(-1, 1, (t, hidden)))


def test_heatmap_data_keeps_order_and_checks_shape():
    data = heatmap_data(np.arange(6).reshape(2, 3), ["r1", "r2"], ["a", "b", "c"])
    assert list(data["row"]) == ["r1"] * 3 + ["r2"] * 3
    assert list(data["value"]) == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError):
        heatmap_data(np.zeros((3, 2)), ["r1", "r2"], ["a", "b", "c"])


def test_gate_charts_label_repeated_words_apart():
    trace = _gate_trace(["the", "box", "the"])
    data = gates_data(trace)
    assert set(data["word"]) == {"01 the", "02 box", "03 the"}
    assert set(data["quantity"]) >= {"forget gate f", "input gate i", "output gate o", "cell state c"}
    shown = gates_data(trace, units=[2, 0])
    assert list(shown["unit"].unique()) == ["unit 02", "unit 00"]  # the units asked for, in that order
    forget = shown[shown["quantity"] == "forget gate f"]
    np.testing.assert_allclose(forget["value"], trace.forget_gate[:, [2, 0]].T.ravel())
    lines = unit_lines_data(trace, unit=3)
    assert len(lines) == 6 * 3
    np.testing.assert_allclose(mean_forget_data(trace)["mean forget gate"], trace.forget_gate.mean(axis=1))
    for template in (gates_chart(gate_column_px(3)), unit_lines_chart(),
                     mean_forget_chart()):
        assert draws_table(_spec(template))


def test_alignment_and_heads_charts():
    weights = np.full((2, 3), 1 / 3)
    data = alignment_data(["a", "b", "a"], ["x", "y"], weights)
    assert len(data) == 6 and data["weight"].sum() == pytest.approx(2.0)
    assert draws_table(_spec(alignment_chart(annotate=True)))
    heads = np.random.default_rng(0).dirichlet(np.ones(4), size=(2, 3, 4))  # (L, N, T, T)
    table = attention_heads_data(["w1", "w2", "w3", "w4"], heads)
    assert len(table) == 2 * 3 * 16
    assert set(table["layer"]) == {"layer 1", "layer 2"} and set(table["head"]) == {"head 1", "head 2", "head 3"}
    cell = table[(table["layer"] == "layer 2") & (table["head"] == "head 3") & (table["from word"] == "04 w4")
                 & (table["to word"] == "02 w2")]
    assert cell["weight"].item() == pytest.approx(heads[1, 2, 3, 1])
    cross = attention_heads_data(["a", "b", "c"], heads[:, :, :2, :3], queries=["x", "y"])
    assert list(cross["from word"].unique()) == ["01 x", "02 y"]
    with pytest.raises(ValueError):
        attention_heads_data(["a", "b"], heads)
    assert draws_table(_spec(attention_heads_chart(heads_cell_px(4))))


def test_templates_sort_by_position_and_fixed_charts_keep_their_data():
    """A template's axes sort its position labels ("01 the", "02 cat"), so no word list is in its spec and a
    renamed word keeps its place when the browser swaps tables; a chart of fixed data carries it inline.
    tests/pages/test_chart_specs.py checks a page's specs against two sentences."""
    spec = _spec(alignment_chart(title="t"))
    rect = spec["layer"][0]["encoding"]
    assert rect["x"]["sort"] == "ascending" and rect["y"]["sort"] == "ascending"
    assert position_labels(["b", "a"] * 6) == sorted(position_labels(["b", "a"] * 6))
    worked = ex.worked_attention(ex.CHAPTER_QUERY, ex.CHAPTER_KEYS, ex.CHAPTER_WORDS)
    assert not draws_table(_spec(attention_weights_chart(worked)))


def test_jacobian_chart_draws_trained_solid_and_untrained_dashed():
    from seqviz.analysis.gradients import JacobianCurve

    curve = JacobianCurve("rnn", np.arange(1, 4), np.array([0.5, 0.25, 0.125]), eta=0.9)
    curves = {("rnn", "untrained"): curve, ("rnn", "trained"): curve}
    assert set(jacobian_data(curves)["state"]) == {"trained", "untrained"}
    spec = json.loads(jacobian_chart({"rnn": "rnn"}).to_json())
    dash = next(layer["encoding"]["strokeDash"] for layer in spec["layer"] if "strokeDash" in layer["encoding"])
    assert dash["sort"] == "ascending"  # trained, untrained, with W_h × s
    assert dash["scale"]["range"][:2] == [[1, 0], [6, 4]]  # solid, dashed


def test_a_model_legend_lists_one_model_per_line_and_asks_room_for_each():
    """Long model names in a row ran off a narrow chart; one per line, with a line's height each."""

    colours = {f"model {i} with a long name (yours)": model_colour("lstm", i) for i in range(6)}
    assert legend_rows(saliency_chart(colours).to_dict(validate=False)) == 6
    assert legend_rows(jacobian_chart(colours).to_dict(validate=False)) == 6
    assert legend_rows(gradient_chart().to_dict(validate=False)) == 2  # its two long series names


def test_a_visitors_model_keeps_its_colour_whatever_else_is_on_the_chart():

    assert model_colour("lstm") == families.get("lstm").colour
    assert model_colour("lstm", 0) == model_colour("rnn", 0)  # by its place, not its family
    assert len({model_colour("lstm", i) for i in range(len(YOUR_COLOURS))}) == len(YOUR_COLOURS)
    assert not set(YOUR_COLOURS) & {f.colour for f in families.FAMILIES.values()}


def test_long_chart_titles_break_into_lines_a_phone_can_show():

    spec = wrap_titles(memory_accuracy_chart({"rnn": model_colour("rnn")}, 0.125).to_dict(
        validate=False))
    assert isinstance(spec["title"], list) and all(len(line) <= TITLE_LINE_CHARS for line in spec["title"])
    assert " ".join(spec["title"]) == "Remember the first word: held-out accuracy against distance"
    short = wrap_titles(gradient_chart().to_dict(validate=False))
    assert short["title"] == "How much gradient reaches k steps back"


def test_only_the_bound_is_grey_dotted_as_the_title_says():
    """The title calls Pascanu et al.'s bound "grey dotted": no measured line may be dotted too (the scaled
    W_h × s line was, and read as a second bound)."""
    spec = json.loads(jacobian_chart({"rnn": model_colour("rnn")}).to_json())
    assert "grey dotted" in spec["title"]
    measured, bound = spec["layer"]
    assert bound["mark"]["color"] == GREY and bound["mark"]["strokeDash"] == [2, 3]
    dashes = measured["encoding"]["strokeDash"]["scale"]["range"]
    assert all(dash[0] > 2 for dash in dashes[1:]), dashes  # solid, dashed, dash-dot: no short-dash dots


# --- Text alternatives (seqviz.charts.describe): what a screen reader reads for a chart ---------------------


def test_a_heatmaps_text_alternative_names_it_and_its_extremes():
    from seqviz.charts.describe import describe

    chart = alignment_chart(title="Where the translator looked")
    table = alignment_data(["where", "is", "it"], ["où", "est"], np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1]]))
    text = describe(chart.to_dict(), table)
    assert text.startswith("Where the translator looked: a heatmap of attention weights. 6 rows.")
    assert "weight from 0.05 (01 où, 02 is) to 0.9 (01 où, 01 where)" in text
    assert text.endswith("Every number is in the chart's CSV download.")


def test_an_untitled_charts_text_alternative_says_what_its_table_holds():
    import pandas as pd

    from seqviz.charts.describe import describe

    table = pd.DataFrame({"source word": ["01 a", "02 b"], "score": [1.0, 3.0], "flag": [True, False]})
    text = describe({"mark": "bar"}, table)
    assert text.startswith("A chart of score by source word, flag. 2 rows. "
                           "score from 1 (01 a, True) to 3 (02 b, False).")
    constant = describe({"mark": "bar", "title": ["Two", "lines"]}, table.assign(score=2.0))
    assert constant.startswith("Two lines. 2 rows. score 2 throughout.")
    assert describe({"mark": "bar"}, pd.DataFrame()).startswith("A chart. It has no data.")


def test_a_long_text_alternative_is_cut_but_keeps_where_the_numbers_are():
    import pandas as pd

    from seqviz.charts.describe import MAX_CHARS, describe

    table = pd.DataFrame({"word": ["x " * 100, "y " * 100], "value": [0.0, 1.0]})
    text = describe({"mark": "bar", "title": "t"}, table)  # a visitor's long word is cut in a row's name
    assert "value from 0 (x x x" in text and "…) to 1 (y y y" in text and len(text) < 250
    text = describe({"mark": "bar", "title": "a long title " * 60}, table)
    assert len(text) <= MAX_CHARS and text.endswith("… Every number is in the chart's CSV download.")
