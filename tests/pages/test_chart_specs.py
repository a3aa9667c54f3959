"""Every chart a page draws is a valid Vega-Lite spec.

The server skips altair's schema check (seqviz.ui: it was half of a page's script time), so the check lives
here: each page runs through AppTest with a sentence that fills every section, and every chart it sends to
the browser is validated against Vega-Lite's schema.
"""

import json

import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema
from conftest import all_text, set_sentence

from seqviz.charts.heatmaps import alignment_chart, alignment_data
from seqviz.charts.training import training_chart
from seqviz.story import PAGES

SENTENCE = "where is my parcel ? it never arrived ."


def _charts(node) -> list:
    found = [node] if getattr(node, "type", None) == "vega_lite_chart" else []
    for child in getattr(node, "children", {}).values():
        found += _charts(child)
    return found


@pytest.mark.parametrize("page", [p for p in PAGES if p.script != "app_pages/train.py"], ids=lambda p: p.url_path)
def test_every_chart_on_the_page_is_valid_vega_lite(open_page, page):
    at = open_page(page.script, s=SENTENCE)
    specs = [json.loads(chart.proto.spec) for chart in _charts(at._tree)]
    if page.url_path:  # the home page draws none
        assert specs, f"/{page.url_path} drew no chart"
    for spec in specs:
        validate_jsonschema(spec, load_schema())


def test_a_chart_carries_its_figure_name_and_keeps_its_own_render_options(open_page):
    """The figure's name joins the chart's usermeta beside what the template put there: a heatmap of many words
    stays on a canvas (seqviz.charts.base), which the browser tests find it by."""
    at = open_page("app_pages/attention.py", s=SENTENCE)
    specs = {json.loads(chart.proto.spec)["usermeta"]["seqviz"]["figure"]: json.loads(chart.proto.spec)
             for chart in _charts(at._tree)}
    assert specs["alignment"]["usermeta"]["embedOptions"] == {"renderer": "canvas"}
    assert "embedOptions" not in specs["attention-weights"]["usermeta"]


def test_the_check_catches_a_broken_spec(open_page):
    at = open_page("app_pages/rnn_memory.py")
    spec = json.loads(_charts(at._tree)[0].proto.spec)
    spec["mark"] = "no-such-mark"
    with pytest.raises(Exception, match="no-such-mark"):
        validate_jsonschema(spec, load_schema())


def test_the_training_curves_chart_is_valid_vega_lite():
    """/train's own chart (its snapshots are the other pages' charts, checked above)."""

    losses = [(step, 2.0 / step) for step in range(1, 700)]
    figure = training_chart(losses, [(100, 0.5), (600, 0.97)], "held-out exact match", 1000)
    validate_jsonschema(figure.to_dict(validate=False), load_schema())


def _sent(at) -> list[tuple[str, list[bytes]]]:
    """Each chart's spec and the tables sent beside it."""
    return [(chart.proto.spec, [d.data.data for d in chart.proto.datasets]) for chart in _charts(at._tree)]


def _same_charts_new_tables(before, after) -> None:
    assert [spec for spec, _ in after] == [spec for spec, _ in before]
    assert any(new != old for (_, new), (_, old) in zip(after, before, strict=True)), "no table changed"


@pytest.mark.parametrize("script", ["app_pages/attention.py", "app_pages/lstm_gates.py", "app_pages/transformer.py",
                                    "app_pages/order.py", "app_pages/vanishing_gradients.py"])
def test_a_new_sentence_sends_new_tables_and_the_same_charts(open_page, script):
    """The browser keeps a chart whose spec is unchanged and only swaps its data: much cheaper than compiling
    a new one. So a new sentence (of a similar length) must change tables, never a spec."""
    at = open_page(script, s="where is my parcel ?")
    before = _sent(at)
    _same_charts_new_tables(before, _sent(set_sentence(at, "my red phone never arrived .")))


@pytest.mark.parametrize(("script", "kind", "key", "value"), [
    ("app_pages/rnn_memory.py", "slider", "w", 0.9),
    ("app_pages/vanishing_gradients.py", "select_slider", "T", 50),
    ("app_pages/vanishing_gradients.py", "select_slider", "scale", 2.0),
    ("app_pages/vanishing_gradients.py", "select_slider", "steps", 100),
    ("app_pages/lstm_gates.py", "slider", "units", 8),
])
def test_moving_a_widget_sends_new_tables_and_the_same_charts(open_page, script, kind, key, value):
    """A widget reruns its part of the page only (AppTest's tree then holds that part's charts)."""
    at = open_page(script, s="where is my parcel ?")
    before = _sent(at)
    getattr(at, kind)(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    after = _sent(at)
    assert after, "the part drew no chart"
    assert {spec for spec, _ in after} <= {spec for spec, _ in before}
    assert any(tables not in [old for _, old in before] for _, tables in after), "no table changed"


def test_a_templates_picture_holds_its_table():
    """The PNG and SVG downloads render the template with its table inline (the browser gets the table apart)."""
    import numpy as np

    from seqviz.ui import figures

    data = alignment_data(["where", "is", "it"], ["où", "est"], np.full((2, 3), 1 / 3))
    svg = figures._lazy_image(alignment_chart(title="mine"), data, "svg")().decode()
    assert svg.lstrip().startswith("<svg")
    assert "01 where" in svg and "02 est" in svg and "0.33" in svg
    assert figures._lazy_image(alignment_chart(), data, "png")().startswith(b"\x89PNG")


def _named_data(node) -> set[str]:
    """The names of the tables a spec's marks draw ({"data": {"name": ...}} anywhere in it)."""
    if isinstance(node, dict):
        names = {node["data"]["name"]} if isinstance(node.get("data"), dict) and "name" in node["data"] else set()
        return names.union(*(_named_data(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_named_data(v) for v in node))
    return set()


@pytest.mark.parametrize("page", [p for p in PAGES if p.url_path and p.script != "app_pages/train.py"],
                         ids=lambda p: p.url_path)
def test_every_table_a_chart_draws_is_sent(open_page, page):
    """A template draws the sentence's table and may draw fixed tables of its own (the chapter's reference point):
    the browser must get all of them, or a layer silently draws nothing."""
    at = open_page(page.script, s=SENTENCE)
    for chart in _charts(at._tree):
        spec = json.loads(chart.proto.spec)
        sent = {d.name for d in chart.proto.datasets} | set(spec.get("datasets", {}))
        assert _named_data(spec) <= sent, f"/{page.url_path}: {spec.get('title')} draws tables never sent"


def test_the_chapters_diamond_is_on_the_gradient_chart(open_page):
    """/rnn-memory's text points at the chapter's (0.5 × 0.75)²⁰ as "the diamond" on the gradient chart."""
    at = open_page("app_pages/rnn_memory.py", n="20")
    specs = [json.loads(c.proto.spec) for c in _charts(at._tree)]
    gradient = next(s for s in specs if "gradient reaches" in json.dumps(s.get("title", "")))
    marks = json.dumps(gradient)
    assert '"shape": "diamond"' in marks
    assert "the diamond" in all_text(at)
    sent = {d.name: d for c in _charts(at._tree) for d in c.proto.datasets}
    reference = [name for name in _named_data(gradient) if name != "table"]
    assert reference and all(name in sent for name in reference)


def _theme_backgrounds() -> dict[str, str]:
    import tomllib
    from pathlib import Path

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    return {name: config["theme"][name]["backgroundColor"] for name in ("light", "dark")}


def _luminance(colour: str) -> float:
    channels = [int(colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _text_marks(node):
    """Every text mark of a spec, with its encoding."""
    if isinstance(node, dict):
        mark = node.get("mark")
        if mark == "text" or (isinstance(mark, dict) and mark.get("type") == "text"):
            yield (mark if isinstance(mark, dict) else {}), node.get("encoding", {})
        for value in node.values():
            yield from _text_marks(value)
    elif isinstance(node, list):
        for value in node:
            yield from _text_marks(value)


@pytest.mark.parametrize("page", [p for p in PAGES if p.url_path and p.script != "app_pages/train.py"],
                         ids=lambda p: p.url_path)
def test_chart_text_reads_on_the_light_and_the_dark_theme(open_page, page):
    """Streamlit themes a chart's axes and legends but not its text marks, which Vega draws black unless told:
    invisible on the dark theme. Every text mark names its colour, and that colour stands out from both
    backgrounds (3:1, the contrast asked of graphics). Numbers written on a heatmap's cells pick black or white
    by the cell's own colour, which is the same in both themes."""
    backgrounds = _theme_backgrounds()
    at = open_page(page.script, s=SENTENCE)
    for chart in _charts(at._tree):
        spec = json.loads(chart.proto.spec)
        for mark, encoding in _text_marks(spec):
            colour = encoding.get("color", {})
            if "condition" in colour:
                continue
            named = [mark.get("color") or colour.get("value")] if "field" not in colour else \
                colour.get("scale", {}).get("range")  # coloured by a field: its scale's colours
            assert named and all(named), (
                f"/{page.url_path}: a text mark of '{spec.get('title')}' has no colour (Vega draws black)")
            for one in named:
                for theme, background in backgrounds.items():
                    assert _contrast(one, background) >= 3, (
                        f"/{page.url_path}: text in {one} on the {theme} background {background}")
