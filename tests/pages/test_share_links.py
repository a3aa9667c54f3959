"""A share link carries every setting a visitor can change on a page.

Every widget of a page's main column is bound to the address. For each page: give every widget a value other
than its default through the address (as a teacher's link would), check each widget took it, then open the
address the share box offers in a new session (a student opening the link) and check every widget again. A
widget left unbound keeps its default and fails. (Moving a bound widget writes the address in the browser:
tests/browser/test_phone_and_themes.py checks that path.)
"""

from urllib.parse import parse_qsl, urlsplit

import pytest
from conftest import APP
from streamlit.testing.v1 import AppTest

from seqviz.story import STORY

SENTENCE = "the charger arrived , but never the parcel that was supposed to have it ."
KINDS = ("slider", "select_slider", "selectbox", "radio", "multiselect", "number_input", "text_input")
PAGES = list(STORY)  # /train too: its form travels (a preset and settings to start from), its runs do not


def _main_widgets(at) -> dict[str, object]:
    """key -> widget, for every widget of the page itself (the sidebar holds the sentence and the models)."""
    found = {}
    for kind in KINDS:
        for widget in getattr(at.main, kind):
            if widget.key:
                found[widget.key] = widget
    return found


CHOICES = ("SelectSlider", "Selectbox", "Radio", "Multiselect")  # compared by the labels they show


def _shown(widget):
    """What a widget shows: a choice's label(s) (an address holds those), else its value."""
    kind = type(widget).__name__
    if kind == "Multiselect":
        return [str(widget.format_func(v)) for v in widget.value]
    if kind in CHOICES:
        return str(widget.format_func(widget.value))
    return widget.value


def _other_setting(widget) -> tuple[list[str], object] | None:
    """A setting other than the widget's current one: (its values in the address, what the widget then shows)."""
    kind, shown = type(widget).__name__, _shown(widget)
    if kind == "Slider":
        new = widget.min if shown != widget.min else widget.max
        return [str(new)], new
    if kind == "Multiselect":
        others = [o for o in widget.options if o not in shown]
        chosen = [*shown, others[0]] if others else shown[:-1]  # one more model shown, or one fewer
        return chosen, chosen
    if kind in CHOICES:
        others = [o for o in widget.options if o != shown]
        return ([others[-1]], others[-1]) if others else None
    if kind == "NumberInput":
        lower = round(shown - widget.step, 6)
        new = lower if widget.min is None or lower >= widget.min else round(shown + widget.step, 6)
        return [str(new)], new
    if kind == "TextInput":
        return ["zebra"], "zebra"
    raise AssertionError(f"no rule for a {kind}")


def _share_address(at) -> str:
    codes = [c.value for c in at.sidebar.code]
    assert codes, "no share box in the sidebar"
    return codes[-1]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.url_path)
def test_a_share_link_carries_every_setting(page):
    linked = _open_address(page.script, [("s", SENTENCE)])
    settings: dict[str, tuple[list[str], object]] = {}
    # Two rounds: a widget's options may follow another's setting (/lstm-gates: the unit picker lists the units
    # shown), so a setting that did not take is chosen again among the options the first round left.
    for _ in range(2):
        for key, widget in _main_widgets(linked).items():
            if key not in settings or _shown(widget) != settings[key][1]:
                setting = _other_setting(widget)
                if setting is not None:
                    settings[key] = setting
        address = [("s", SENTENCE)] + [(key, v) for key, (values, _) in settings.items() for v in values]
        linked = _open_address(page.script, address)
    wanted = {key: value for key, (_, value) in settings.items()}
    took = {key: _shown(w) for key, w in _main_widgets(linked).items() if key in wanted}
    assert took == wanted, "a widget is not bound to the address (it kept its default)"

    shared = urlsplit(_share_address(linked))
    assert shared.path.rstrip("/").endswith(page.url_path), shared
    opened = _open_address(page.script, parse_qsl(shared.query, keep_blank_values=True))
    got = {key: _shown(w) for key, w in _main_widgets(opened).items() if key in wanted}
    assert got == wanted, f"the share box's address lost a setting: {shared.query}"
    assert opened.sidebar.text_input(key="s").value == SENTENCE


def _open_address(script, pairs):
    """A new session opened at this address (a key may repeat: a multiselect's values)."""
    at = AppTest.from_file(APP, default_timeout=60)
    for key in dict.fromkeys(k for k, _ in pairs):
        at.query_params[key] = [v for k, v in pairs if k == key]
    at.run()
    at.switch_page(script).run()
    assert not at.exception, [e.value for e in at.exception]
    return at
