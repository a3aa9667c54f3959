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
