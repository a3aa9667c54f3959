"""AppTest helpers: open a page of the app through its router, as a visitor's browser would."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")

# Sentences a visitor might type: the chapter's, outside any grammar, hostile ones.
SENTENCES = [
    "The charger arrived, but never the parcel that was supposed to have it.",
    "where is my parcel",
    "Hello",
    "zzz qqq xyzzy",
    "**bold** [link](http://evil.example) <script>alert(1)</script> :material/home: $x^2$",
    "   ",
    "é" * 2000,
]


@pytest.fixture
def open_page():
    def _open(script: str | None = None, **query: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60)
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
        if script:
            at.switch_page(script).run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return _open


def set_sentence(at: AppTest, text: str) -> AppTest:
    at.sidebar.text_input(key="s").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def all_text(at: AppTest) -> str:
    """Everything a visitor reads on the page: markdown, captions, info boxes, code."""
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "code", "text", "title", "header", "subheader",
                 "latex"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts).replace("\\", "")  # markdown escapes of visitor text removed


def figures_shown(at: AppTest) -> list[str]:
    """The figures the page draws, in order, by the names of the factories that made them (seqviz.charts): the
    name each chart carries in its spec's usermeta."""
    import json

    return [json.loads(chart.proto.spec).get("usermeta", {}).get("seqviz", {}).get("figure", "?")
            for chart in at.get("vega_lite_chart")]


@pytest.fixture
def cookies(monkeypatch) -> dict[str, str]:
    """The cookies every session opened in this test sends, as a browser sends them with its websocket's request
    (st.context.cookies): AppTest has no client to send any, so the test fills this dict before it opens a session.
    (The lab store itself is a folder of the test run: tests/conftest.py sets SEQVIZ_DATA_DIR.)"""
    sent: dict[str, str] = {}

    class Client:
        headers: tuple = ()
        cookies = sent
        remote_ip = None

    monkeypatch.setattr("streamlit.runtime.context._get_client_context", lambda: Client)
    return sent


def lab_cookie(at: AppTest) -> dict:
    """What the session told the browser to keep (seqviz.ui.lab's cookie keeper): its data, the key included."""
    import json

    (keeper,) = [e for e in at.get("bidi_component") if e.proto.component_name == "seqviz_lab_cookie"]
    return json.loads(keeper.proto.json)
