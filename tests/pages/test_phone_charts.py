"""A narrow screen (a phone) gets the phone forms of the heatmaps and of the bars beside words, with the same
tables; a wide one gets what it always did, and its browser is never asked to rerun the page for its width
(seqviz.ui.screen)."""

from __future__ import annotations

import json
import types

import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema
from conftest import APP
from streamlit.testing.v1 import AppTest

from seqviz.ui.screen import NARROW_KEY

SENTENCE = "the charger arrived , but never the parcel that was supposed to have it at last ."  # 17 words
HEATMAPS = {"app_pages/attention.py": "alignment", "app_pages/transformer.py": "attention-heads",
            "app_pages/lstm_gates.py": "gates", "app_pages/explain.py": "pronoun"}
WORD_PANELS = {"app_pages/attention.py": {"attention-step"}, "app_pages/explain.py": {"importance", "taus"}}


def _open(script: str, narrow: bool | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["s"] = SENTENCE
    if narrow is not None:
        at.session_state[NARROW_KEY] = narrow
    at.run()
    at.switch_page(script).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _charts(at: AppTest) -> list[tuple[str, dict, list[bytes]]]:
    """(figure name, spec, tables sent) of each chart on the page."""
    found = []
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        found.append((spec.get("usermeta", {}).get("seqviz", {}).get("figure", "?"), spec,
                      [d.data.data for d in chart.proto.datasets]))
    return found


@pytest.mark.parametrize("script", list(HEATMAPS))
def test_a_narrow_screen_gets_the_heatmaps_in_blocks_with_the_same_tables(script):
    wide, narrow = _charts(_open(script, None)), _charts(_open(script, True))
    assert [name for name, _, _ in narrow] == [name for name, _, _ in wide]
    heatmap, panels = HEATMAPS[script], WORD_PANELS.get(script, set())
    assert {heatmap, *panels} <= {name for name, _, _ in narrow}
    for (name, phone_spec, phone_tables), (_, desktop_spec, desktop_tables) in zip(narrow, wide, strict=True):
        assert phone_tables == desktop_tables, f"{name}: a phone must get the same table (and CSV)"
        if name not in {heatmap, *panels}:
            assert phone_spec == desktop_spec, f"{name} has no phone form: it must not change"
            continue
        validate_jsonschema(phone_spec, load_schema())
        assert phone_spec != desktop_spec
        if name in panels:  # bars beside words: the desktop's one row, a phone's rows one under the other
            assert "hconcat" in desktop_spec or "hconcat" in desktop_spec["vconcat"][0], name
            assert "vconcat" in phone_spec, name
            continue
        blocks = [phone_spec] if "facet" in phone_spec else phone_spec["vconcat"]  # the gates: four panels
        for block in blocks:
            assert block["facet"]["row"]["field"] == "panel" and block["resolve"]["scale"]["x"] == "independent"


def test_a_session_is_wide_until_its_browser_says_otherwise():
    """No User-Agent behind a page test: the session starts wide and draws the desktop's heatmaps."""
    at = _open("app_pages/attention.py", None)
    assert at.session_state[NARROW_KEY] is False
    alignment = [spec for name, spec, _ in _charts(at) if name == "alignment"]
    assert alignment and all("facet" not in spec for spec in alignment)


def test_a_phones_browser_is_believed_narrow_from_its_first_run(monkeypatch):
    """A phone's browser names itself one ("Mobile" in its User-Agent): its first run draws the phone forms, and no
    second run waits on its component's answer."""
    from seqviz.browser import PHONE

    class Client:
        headers = (("User-Agent", PHONE["user_agent"]),)
        cookies = types.MappingProxyType({})
        remote_ip = None

    monkeypatch.setattr("streamlit.runtime.context._get_client_context", lambda: Client)
    at = _open("app_pages/attention.py", None)
    assert at.session_state[NARROW_KEY] is True
    alignment = [spec for name, spec, _ in _charts(at) if name == "alignment"]
    assert alignment and all("facet" in spec for spec in alignment)


def test_heads_too_many_for_a_phones_canvas_keep_their_desktop_form():
    """8 heads of 30 words (7,200 cells) would draw a canvas taller than a phone's browser draws: that chart keeps
    its desktop form (it scrolls sideways, and says so)."""
    from seqviz.charts.base import PHONE_MAX_CELLS

    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["s"] = " ".join(["where is my parcel ?"] * 6)
    at.session_state[NARROW_KEY] = True
    at.run()
    at.switch_page("app_pages/transformer.py").run()
    assert not at.exception, [e.value for e in at.exception]
    self_attention = next(spec for name, spec, _ in _charts(at) if name == "attention-heads")
    assert "column" in self_attention["facet"], "8 heads of 30 words: the desktop's grid"
    assert PHONE_MAX_CELLS < 8 * 30 * 30
