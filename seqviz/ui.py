"""The only streamlit-aware module of seqviz: the shared sentence, charts with downloads, safe text.

Pages call these helpers and hold no model math and build no chart themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

import altair as alt
import pandas as pd
import streamlit as st

from seqviz.limits import MAX_CHARS

SENTENCE_KEY = "s"  # also the URL query parameter: /attention?s=where+is+my+parcel
DEFAULT_SENTENCE = "The parcel arrived, but never the charger that was supposed to be in it."

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~$:&])")


def escape_markdown(text: str) -> str:
    """Make visitor text print as itself inside st.markdown / st.warning (no links, HTML, icons, LaTeX)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def sentence_input() -> None:
    """The sidebar's one sentence, bound to ?s= so a copied address reopens the same view."""
    st.sidebar.text_input(
        "Sentence",
        value=DEFAULT_SENTENCE,
        key=SENTENCE_KEY,
        max_chars=MAX_CHARS,
        bind="query-params",
        help="Every page works on this sentence. It is kept in the address bar, so a copied link "
             "opens the same page with the same sentence.",
    )


def sentence() -> str:
    """The current sentence, bounded; the default when the box is empty."""
    value = st.session_state.get(SENTENCE_KEY)
    if not isinstance(value, str) or not value.strip():
        return DEFAULT_SENTENCE
    return value[:MAX_CHARS]


def show_sentence(label: str = "Sentence") -> None:
    """Echo the sentence as plain text (never Markdown)."""
    st.caption(label)
    st.text(sentence())


def notice(message: str) -> None:
    """A warning whose text (which may quote the visitor) is shown literally."""
    st.warning(escape_markdown(message), icon=":material/info:")


def share_box(url_path: str) -> None:
    """The address of this page with the current sentence and settings, ready to copy."""
    address = f"{_app_base_url()}/{url_path}"
    params = {k: v for k, v in st.query_params.to_dict().items() if isinstance(v, str)}
    if sentence() != DEFAULT_SENTENCE:
        params[SENTENCE_KEY] = sentence()
    if params:
        address += "?" + urlencode(params)
    with st.sidebar:
        st.caption("Share this view: copy the address")
        st.code(address, language=None, wrap_lines=True)


def _app_base_url() -> str:
    """scheme://host of the address the visitor opened (localhost when unknown, as in tests)."""
    parts = urlsplit(st.context.url or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "http://localhost:8501"


def chart(figure: alt.TopLevelMixin, data: pd.DataFrame, name: str) -> None:
    """Draw an altair chart and offer its data as CSV and its picture as PNG and SVG."""
    st.altair_chart(figure, width="stretch", height=_height_of(figure))
    row = st.container(horizontal=True)
    row.download_button("CSV", data=_csv_of(data), file_name=f"{name}.csv", mime="text/csv",
                        key=f"csv-{name}", icon=":material/download:", on_click="ignore")
    row.download_button("PNG", data=_lazy_image(figure, "png"), file_name=f"{name}.png", mime="image/png",
                        key=f"png-{name}", icon=":material/image:", on_click="ignore")
    row.download_button("SVG", data=_lazy_image(figure, "svg"), file_name=f"{name}.svg",
                        mime="image/svg+xml", key=f"svg-{name}", icon=":material/draw:", on_click="ignore")


def _height_of(figure: alt.TopLevelMixin) -> int | str:
    """The chart's own height plus room for its title, axes and legend; Streamlit's "content" squashes it."""
    height = getattr(figure, "height", alt.Undefined)
    return int(height) + 110 if isinstance(height, int | float) else "content"


def _csv_of(data: pd.DataFrame) -> Callable[[], bytes]:
    return lambda: data.to_csv(index=False).encode("utf-8")


def _lazy_image(figure: alt.TopLevelMixin, fmt: str) -> Callable[[], bytes]:
    """Rendered only when the visitor asks for it (vl-convert works offline)."""

    def render() -> bytes:
        import vl_convert as vlc

        spec = figure.to_json()
        if fmt == "png":
            return vlc.vegalite_to_png(spec, scale=2)
        return vlc.vegalite_to_svg(spec).encode("utf-8")

    return render
