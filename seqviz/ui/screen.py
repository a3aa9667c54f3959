"""Whether this visitor's screen is narrow (a phone): the charts that have a form for one draw it there.

Streamlit tells the server nothing of the window's size. The browser tells it here, through a component that is
given only what the server believes (narrow or not) and answers only when that is wrong: a desktop, believed wide
from the start, sends nothing and costs no rerun; a phone's browser names itself a phone in its User-Agent
("Mobile"), so it is believed narrow from its first run, and a window made narrow or wide later (a phone turned
sideways, a desktop's window dragged) says so once, when it crosses the line.
"""

from __future__ import annotations

import streamlit as st

NARROW_KEY = "_narrow"  # session state: whether the screen is narrow, as last known (a page test may set it)
_SCREEN_KEY = "_screen"  # the component's element
NARROW_PX = 640  # Streamlit's own breakpoint: at this width or less, the sidebar covers the page

# It draws nothing; it is given a boolean, never anything a visitor typed.
_SCREEN_JS = """
export default function ({ data, setTriggerValue }) {
  window.__seqvizScreen = { known: !!(data && data.narrow), tell: setTriggerValue };
  const query = window.matchMedia("(max-width: NARROW_PXpx)");
  const check = () => {
    const screen = window.__seqvizScreen;
    if (query.matches !== screen.known) { screen.known = query.matches; screen.tell("narrow", query.matches); }
  };
  if (!window.__seqvizScreenHooked) {
    window.__seqvizScreenHooked = true;
    query.addEventListener("change", check);
  }
  check();
}
""".replace("NARROW_PX", str(NARROW_PX))
_SCREEN = st.components.v2.component("seqviz_screen", js=_SCREEN_JS, css=":host { display: none; }")


def _told() -> None:
    said = getattr(st.session_state.get(_SCREEN_KEY), "narrow", None)
    if isinstance(said, bool):
        st.session_state[NARROW_KEY] = said


def _looks_like_a_phone() -> bool:
    """A first guess before the browser says: phones' browsers put "Mobi" in their User-Agent, tablets' do not."""
    try:
        agent = st.context.headers.get("User-Agent") or ""
    except Exception:  # no request behind this run (a page test)
        return False
    return "Mobi" in agent


def watch() -> None:
    """Once per full run (seqviz.ui.page_style): the component that tells the server when the screen is narrow."""
    if NARROW_KEY not in st.session_state:
        st.session_state[NARROW_KEY] = _looks_like_a_phone()
    with st.sidebar:
        _SCREEN(key=_SCREEN_KEY, on_narrow_change=_told, width="content", height=0,
                data={"narrow": bool(st.session_state[NARROW_KEY])})


def narrow() -> bool:
    """Whether this visitor's screen is at most NARROW_PX wide, as last known."""
    return bool(st.session_state.get(NARROW_KEY, False))
