"""Text from visitors shown as itself, and the notices a page gives (a warning quoting the visitor, a moved
visitor's toast)."""

from __future__ import annotations

import os
import re

import streamlit as st

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~$:&])")


def escape_markdown(text: str) -> str:
    """Make visitor text print as itself inside st.markdown / st.warning (no links, HTML, icons, LaTeX)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def notice(message: str) -> None:
    """A warning whose text (which may quote the visitor) is shown literally."""
    st.warning(escape_markdown(message), icon=":material/info:")


_MOVED_KEY = "seqviz-moved-told"  # session state: the toast about a moved session was shown


def moved_notice() -> None:
    """Behind the lecture hall's balancer: tell a visitor whose server stopped that they are on another one now (the
    balancer's short-lived cookie names the server they were moved from; seqviz.share.moved_from). Their lab is in
    the store all servers share, so it came with them; a server on a store of its own says so instead."""
    from seqviz.share import SERVER_NAME_VARIABLE, moved_from
    from seqviz.ui import lab

    was = moved_from(st.context.cookies, os.environ.get(SERVER_NAME_VARIABLE))
    if was is None:
        return
    lost = lab.sent_unknown_key()
    if not st.session_state.get(_MOVED_KEY):
        st.session_state[_MOVED_KEY] = True
        st.toast("Your server stopped: you are on another one now." + ("" if lost else " Your lab came with you."),
                 icon=":material/swap_horiz:", duration="long")
    if lost:
        st.sidebar.warning(
            f"The server you were on ({escape_markdown(was)}) stopped, and you were moved to one that does not share "
            "its lab store, so your models and runs from before are not here (a checkpoint you downloaded can be "
            "uploaded again). The hall's operator can fix this: every app server needs the same SEQVIZ_DATABASE_URL.",
            icon=":material/swap_horiz:")


