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
PAGES = [p for p in STORY if p.script != "app_pages/train.py"]  # /train's runs live in the visitor's tab


def _main_widgets(at) -> dict[str, object]:
    """key -> widget, for every widget of the page itself (the sidebar holds the sentence and the models)."""
    found = {}
    for kind in KINDS:
        for widget in getattr(at.main, kind):
            if widget.key:
                found[widget.key] = widget
    return found


def _raw_options(widget) -> list:
    """The values behind a widget's shown options (AppTest gives the formatted labels)."""
    fmt = widget.format_func
    raw = []
    for index, shown in enumerate(widget.options):
        for candidate in (_number(shown), index, shown):
            try:
                if candidate is not None and str(fmt(candidate)) == shown:
                    raw.append(candidate)
                    break
            except (TypeError, IndexError, KeyError, ValueError):
                continue
        else:
            raise AssertionError(f"cannot tell the value behind the option {shown!r} of {widget.key}")
    return raw


def _number(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return None


def _other_setting(widget) -> tuple[list[str], object] | None:
    """A setting other than the widget's current one: (its values in the address, the widget's value then)."""
    kind, value = type(widget).__name__, widget.value
    if kind == "Slider":
        new = widget.min if value != widget.min else widget.max
        return [str(new)], new
    if kind in ("SelectSlider", "Selectbox", "Radio"):
        raw = _raw_options(widget)
        others = [i for i, o in enumerate(raw) if o != value]
        return ([widget.options[others[-1]]], raw[others[-1]]) if others else None
    if kind == "Multiselect":
        raw = _raw_options(widget)
        chosen = [i for i, o in enumerate(raw) if o in value]
        others = [i for i, o in enumerate(raw) if o not in value]
        chosen = [*chosen, others[0]] if others else chosen[:-1]  # one more model shown, or one fewer
        return [widget.options[i] for i in chosen], [raw[i] for i in chosen]
    if kind == "NumberInput":
        new = round(value - 0.5, 2) if widget.min is None or value - 0.5 >= widget.min else round(value + 0.5, 2)
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
            if key not in settings or widget.value != settings[key][1]:
                setting = _other_setting(widget)
                if setting is not None:
                    settings[key] = setting
        address = [("s", SENTENCE)] + [(key, v) for key, (values, _) in settings.items() for v in values]
        linked = _open_address(page.script, address)
    wanted = {key: value for key, (_, value) in settings.items()}
    took = {key: w.value for key, w in _main_widgets(linked).items() if key in wanted}
    assert took == wanted, "a widget is not bound to the address (it kept its default)"

    shared = urlsplit(_share_address(linked))
    assert shared.path.rstrip("/").endswith(page.url_path), shared
    opened = _open_address(page.script, parse_qsl(shared.query, keep_blank_values=True))
    got = {key: w.value for key, w in _main_widgets(opened).items() if key in wanted}
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
