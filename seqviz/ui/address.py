"""Settings that travel in a page's address (the share link), read one way.

A widget bound to the address (``bind="query-params"``) takes the address's value when it can; when it cannot (a
number out of range, a word the picker does not offer, text where a number goes) Streamlit quietly shows the
usual choice. The helpers here make those widgets so that the bounds the widget is given are the bounds the
address is checked against, and the visitor is told in a plain sentence which setting of the address was not
taken: nothing else is lost, every other setting of the link still applies.

- :func:`slider`, :func:`number_input`: a bounded number (whole or not);
- :func:`select_slider`, :func:`selectbox`, :func:`radio`: a pick among options, read by the label the visitor
  sees (an address holds "03 rouge", not 2); a pick the page's new sentence no longer offers (step 9 of a shorter
  translation) goes back to its default, as a fresh page would open it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from seqviz.ui.notices import notice

Takes = Callable[[str], bool]  # a test of one value of the address, as text


def in_range(low: float, high: float, whole: bool) -> Takes:
    """A test of an address's text: a number from ``low`` to ``high`` (a whole one if ``whole``)."""

    def takes(text: str) -> bool:
        if whole:
            return text.isdigit() and low <= int(text) <= high  # (no sign: "-5" and "+5" are not whole numbers)
        try:
            value = float(text)
        except ValueError:
            return False
        return math.isfinite(value) and low <= value <= high

    return takes


def one_of(options: Sequence[str]) -> Takes:
    """A test of an address's text: one of ``options`` (as the picker shows them)."""
    allowed = set(options)
    return lambda text: text in allowed


def say_if_not_taken(key: str, takes: Takes, what: str) -> None:
    """Before a widget bound to ``key`` in the address: say so when the address asks for a setting it cannot take
    (``takes`` is False for it); the widget then shows its usual choice."""
    for value in st.query_params.get_all(key):
        if not takes(value):
            notice(f"The address asks for {what} “{value[:40]}”, which is not one to pick here: showing the usual "
                   "choice instead.")


def keep_within(key: str, options: Sequence, default) -> None:
    """Before a picker whose options follow the sentence: a pick the new sentence no longer has goes back to
    ``default``, as a fresh page would open it."""
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = default


def slider(where, label: str, low, high, value, *, key: str, what: str, **options) -> Any:
    """A slider bound to the address, from ``low`` to ``high`` (whole numbers if all three are ints)."""
    whole = all(isinstance(v, int) for v in (low, high, value))
    say_if_not_taken(key, in_range(low, high, whole), what)
    return where.slider(label, low, high, value, key=key, bind="query-params", **options)


def number_input(where, label: str, low, high, value, *, key: str, what: str, **options) -> Any:
    """A number box bound to the address, from ``low`` to ``high`` (whole numbers if all three are ints)."""
    whole = all(isinstance(v, int) for v in (low, high, value))
    say_if_not_taken(key, in_range(low, high, whole), what)
    return where.number_input(label, low, high, value, key=key, bind="query-params", **options)


def _pick(kind: str, where, label: str, options: Sequence, default, key: str, what: str,
          format_func: Callable[[Any], str] = str, **more) -> Any:
    options = list(options)
    if default not in options:
        raise ValueError(f"the default {default!r:.40} of {key!r} is not among its options")
    keep_within(key, options, default)
    say_if_not_taken(key, one_of([str(format_func(o)) for o in options]), what)
    where = st if where is None else where
    if kind == "select_slider":
        return where.select_slider(label, options=options, value=default, format_func=format_func, key=key,
                                   bind="query-params", **more)
    return getattr(where, kind)(label, options, index=options.index(default), format_func=format_func, key=key,
                                bind="query-params", **more)


def select_slider(where, label: str, options: Sequence, default, *, key: str, what: str, **more) -> Any:
    """A select slider bound to the address by the labels it shows."""
    return _pick("select_slider", where, label, options, default, key, what, **more)


def selectbox(where, label: str, options: Sequence, default, *, key: str, what: str, **more) -> Any:
    """A drop-down list bound to the address by the labels it shows."""
    return _pick("selectbox", where, label, options, default, key, what, **more)


def radio(where, label: str, options: Sequence, default, *, key: str, what: str, **more) -> Any:
    """Radio buttons bound to the address by the labels they show."""
    return _pick("radio", where, label, options, default, key, what, **more)
