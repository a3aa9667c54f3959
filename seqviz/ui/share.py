"""The share box: this page's address with the sentence and settings (never the lab's key or a visitor's own
models), and a QR code where the address reaches other devices."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from seqviz.ui.sentence_box import DEFAULT_SENTENCE, SENTENCE_KEY, sentence

SHARE_PART = "share"  # the share box's fragment key: every part that changes the address reruns it


def share_box(url_path: str) -> None:
    """The address of this page with the current sentence and settings, ready to copy.

    A visitor's own models cannot travel in a link (they live in this browser's lab only): they are left out
    of the address, and the box says so. The lab's key is never in it: only the browser's cookie holds it.
    """
    with st.sidebar:
        _share_part(url_path)


@st.fragment(key=SHARE_PART)
def _share_part(url_path: str) -> None:
    from seqviz.registry import is_yours
    from seqviz.share import is_local_address
    from seqviz.ui import reach

    address = f"{reach.base_url()}/{url_path}"
    params: list[tuple[str, str]] = []
    left_out = False
    for key in st.query_params:
        for value in st.query_params.get_all(key):
            if key == SENTENCE_KEY:
                continue
            if is_yours(value):
                left_out = True
                continue
            params.append((key, value))
    if sentence() != DEFAULT_SENTENCE:
        params.append((SENTENCE_KEY, sentence()))  # "" too: ?s= opens an empty box
    if params:
        address += "?" + urlencode(params)
    local = is_local_address(address)
    class_here = reach.serving_class()
    if class_here and not local:
        st.caption("Share this view with the class: anyone on this computer's network can open")
    else:
        st.caption("Share this view: copy the address")
    st.code(address, language=None, wrap_lines=True)
    if local and class_here:
        st.caption("This computer has no address on a local network yet, so this address works only on it: "
                   "join the classroom's Wi-Fi and the address for the class shows here.")
    elif local:
        st.caption("This address works only on this computer: to share the lab with a class on this network, "
                   "start it with `SEQVIZ_LAN=1 scripts/serve` (docs/hosting.md, *Serve a class from a laptop*), or "
                   "host it (docs/hosting.md) and share that host's address.")
    if left_out:
        st.caption("Your own models are not in this link: they live in this browser's lab only. Whoever "
                   "opens it sees the shipped models you picked.")
    if not local:
        with st.expander("QR code for phones", icon=":material/qr_code_2:"):
            reach.qr(address, "Scan with a phone's camera to open this view. For a projector, the code's "
                     "full-screen button (top right, on hover) fills the screen.")


