"""The only streamlit-aware part of seqviz: the shared sentence, charts with downloads, safe text.

Pages call these helpers (and :mod:`seqviz.ui.models` for models) and hold no model math and build no chart
themselves.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from urllib.parse import urlencode

import altair as alt
import pandas as pd
import streamlit as st

from seqviz import charts
from seqviz.charts.base import LEGEND_ROW_PX, TABLE, draws_table, legend_rows, position_labels, wrap_titles
from seqviz.limits import MAX_CHARS

# Altair checks every chart part against the Vega-Lite schema as it is built, then the whole chart again
# when it is turned into a spec: about half of a page's script time. seqviz's charts are checked once, by the
# unit tests (tests/unit/test_charts.py turns every chart into a validated spec); the server skips both.
alt.utils.schemapi.disable_debug_mode()

SENTENCE_KEY = "s"  # also the URL query parameter: /attention?s=where+is+my+parcel
DEFAULT_SENTENCE = "The parcel arrived, but never the charger that was supposed to be in it."

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~$:&])")


def escape_markdown(text: str) -> str:
    """Make visitor text print as itself inside st.markdown / st.warning (no links, HTML, icons, LaTeX)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


# A chart drawn at its own width (a heatmap of a long sentence, panels side by side) scrolls inside its own
# box on a narrow screen, with its labels and colour scale, instead of pushing the page sideways.
_PAGE_STYLE = """<style>
[data-testid="stVegaLiteChart"] { max-width: 100%; overflow-x: auto; overflow-y: hidden; }
.st-key-_lab_cookie { display: none; }  /* the lab's cookie keeper (seqviz.ui.lab) draws nothing: no gap either */
</style>"""


def page_style() -> None:
    """Layout rules every page shares (app.py calls it once per run)."""
    st.html(_PAGE_STYLE)


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
    """The current sentence, bounded (empty when the visitor cleared the box)."""
    value = st.session_state.get(SENTENCE_KEY, DEFAULT_SENTENCE)
    return value[:MAX_CHARS] if isinstance(value, str) else DEFAULT_SENTENCE


def table(data: pd.DataFrame, number_format: str | Callable, text_columns: tuple[str, ...] = (),
          hide_index: bool = True) -> None:
    """A small static table. ``st.table`` is plain HTML; the interactive grid of ``st.dataframe`` refreshes a
    hidden copy for screen readers 0.2 s after every rerun. Its cells are Markdown, so visitor text in
    ``text_columns`` is escaped."""
    shown = data.assign(**{column: data[column].map(escape_markdown) for column in text_columns})
    numbers = {column: number_format for column in data.columns if column not in text_columns}
    st.table(shown.style.format(numbers), hide_index=hide_index)


def show_sentence(label: str = "Sentence") -> None:
    """Echo the sentence as plain text (never Markdown)."""
    st.caption(label)
    if sentence().strip():
        st.text(sentence())
    else:
        st.info("The sentence box is empty: type a sentence in the sidebar.", icon=":material/edit:")


def notice(message: str) -> None:
    """A warning whose text (which may quote the visitor) is shown literally."""
    st.warning(escape_markdown(message), icon=":material/info:")


SHARE_PART = "share"  # the share box's fragment key: every part that changes the address reruns it


def part(key: str) -> Callable:
    """Decorator for a part of a page that reruns alone when one of its own widgets changes (st.fragment).

    Moving a slider then redraws that part, not every model and chart above it. Its widgets bound to the
    address take ``on_change=ui.rerun_part(key)``, so the share box shows the new address too.
    """
    return st.fragment(key=key)


def rerun_part(*keys: str) -> Callable[[], None]:
    """An on_change callback: rerun the parts ``keys`` and the share box, and nothing else."""
    return lambda: st.rerun([*keys, SHARE_PART])


def output_word(traces: dict, part_key: str, model_key: str, word_key: str) -> tuple[str, int]:
    """Inside the part ``part_key``: a translator (a radio, when there are several) and one of the words it wrote
    (a slider), both bound to the address; returns the translator's label and the word's index."""
    label = next(iter(traces))
    if len(traces) > 1:
        label = st.radio("Translator", list(traces), horizontal=True, key=model_key, bind="query-params",
                         on_change=rerun_part(part_key))
    words = position_labels(traces[label].out_tokens)
    step = st.select_slider("Output word", options=list(range(len(words))), format_func=words.__getitem__,
                            key=word_key, bind="query-params", on_change=rerun_part(part_key))
    return label, min(step, len(words) - 1)


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


def slug(text: str) -> str:
    """A file-name-safe form of a label: "my model (yours)" -> "my-model-yours"."""
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "chart"


def draw(figure: charts.Figure, name: str) -> None:
    """Draw a figure (seqviz.charts: a template and its table) and offer its data as CSV and its picture as PNG and
    SVG, the files named ``name``.

    The template is built once per server for the same arguments and shared by every visitor: altair takes 20 to
    120 ms to build one layered chart, and a page's full rerun (a new sentence) would rebuild every chart on it,
    most of them unchanged. A template gets the figure's table as its data: its spec is the same for every
    sentence, so the browser keeps the chart it has and swaps in the new table, rather than compiling a new chart.
    The figure's name goes with the chart (Vega-Lite's ``usermeta``), for tests and tools to know which it is.
    """
    template = _template(f"{figure.make.__module__}.{figure.make.__qualname__}", tuple(figure.args),
                         dict(figure.kwargs), figure.make)
    spec = {**_spec_of(template), "usermeta": {"seqviz": {"figure": figure.name}}}
    table = figure.table if draws_table(spec) else None
    if table is not None:
        # Keep the chart's own fixed tables (a reference point, say) beside the sentence's.
        spec = {**spec, "datasets": {**spec.get("datasets", {}), TABLE: table}}
    st.vega_lite_chart(spec=spec, width="content" if _has_own_width(template) else "stretch",
                       height=_height_of(template, spec))
    row = st.container(horizontal=True)
    row.download_button("CSV", data=_csv_of(figure.table), file_name=f"{name}.csv", mime="text/csv",
                        key=f"csv-{name}", icon=":material/download:", on_click="ignore")
    row.download_button("PNG", data=_lazy_image(template, table, "png"), file_name=f"{name}.png", mime="image/png",
                        key=f"png-{name}", icon=":material/image:", on_click="ignore")
    row.download_button("SVG", data=_lazy_image(template, table, "svg"), file_name=f"{name}.svg",
                        mime="image/svg+xml", key=f"svg-{name}", icon=":material/draw:", on_click="ignore")


@st.cache_resource(max_entries=256, show_spinner=False)
def _template(name: str, args: tuple, kwargs: dict, _make: Callable[..., alt.TopLevelMixin]) -> alt.TopLevelMixin:
    return _make(*args, **kwargs)


def show(view: str, traces: dict, name: str, colours: dict[str, str] | None = None, figure: str | None = None,
         **options) -> None:
    """Draw the traces (label -> trace) as the view ``view`` draws its figure ``figure`` (None: its main one; see
    seqviz.views). Its charts are named ``name``, or ``name-<model>`` when it draws one per model, then ``name-2``,
    ``name-3`` when it draws several."""
    from seqviz import views

    for number, drawn in enumerate(views.get(view).figures(traces, colours, figure, **options), start=1):
        if drawn.label is not None:
            draw(drawn, f"{name}-{slug(drawn.label)}")
        else:
            draw(drawn, name if number == 1 else f"{name}-{number}")


def _spec_of(figure: alt.TopLevelMixin) -> dict:
    """The chart as Streamlit sends it (Vega-Lite, its tables as Arrow), converted once per chart object.

    Charts from ``figure`` are shared, so a chart that a rerun leaves unchanged costs no conversion: altair's
    ``to_dict`` was a quarter of /attention's script time on every full rerun. Streamlit's own conversion is
    used (as ``st.altair_chart`` does), so the spec is the same; ``st.vega_lite_chart`` copies the spec's top
    level before it takes the tables out, and never changes what is below. tests/pages/test_chart_specs.py
    validates every chart drawn.
    """
    from streamlit.elements.vega_charts import _convert_altair_to_vega_lite_spec

    spec = vars(figure).get("_streamlit_spec")
    if spec is None:
        spec = wrap_titles(_convert_altair_to_vega_lite_spec(_unchecked(figure)))
        object.__setattr__(figure, "_streamlit_spec", spec)
    return spec


def _unchecked(figure: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart, turned into a spec without the schema check (see disable_debug_mode above).

    Streamlit calls ``figure.to_dict()`` with altair's default, ``validate=True``; this chart's own to_dict
    defaults to False instead. Set with object.__setattr__: altair charts store attributes as spec fields.
    """
    object.__setattr__(figure, "to_dict", functools.partial(type(figure).to_dict, figure, validate=False))
    return figure


def _has_own_width(figure: alt.TopLevelMixin) -> bool:
    """Compound charts (concat, facet) and charts sized per word (a heatmap's cells) keep the width they were
    drawn with: stretched to a phone's column, sixteen cells would squeeze their numbers into each other. Such
    a chart scrolls inside its own box where the screen is narrower (see _PAGE_STYLE)."""
    if isinstance(figure, alt.VConcatChart | alt.HConcatChart | alt.ConcatChart | alt.FacetChart):
        return True
    return isinstance(getattr(figure, "width", alt.Undefined), alt.Step)


def _height_of(figure: alt.TopLevelMixin, spec: dict) -> int | str:
    """The chart's own height plus room for its title, axes and legend (a legend of several lines gets a line's
    height for each): Streamlit's "content" squashes it, and a fixed height too small squeezes the plot."""
    height = getattr(figure, "height", alt.Undefined)
    if not isinstance(height, int | float):
        return "content"
    return int(height) + 110 + LEGEND_ROW_PX * (legend_rows(spec) - 1)


def _csv_of(data: pd.DataFrame) -> Callable[[], bytes]:
    return lambda: data.to_csv(index=False).encode("utf-8")


def _lazy_image(figure: alt.TopLevelMixin, table: pd.DataFrame | None, fmt: str) -> Callable[[], bytes]:
    """Rendered only when the visitor asks for it (vl-convert works offline); a template's table inline."""

    def render() -> bytes:
        import vl_convert as vlc

        spec = figure.to_dict(validate=False)
        if table is not None:
            spec["datasets"] = {**spec.get("datasets", {}), TABLE: json.loads(table.to_json(orient="records"))}
        if fmt == "png":
            return vlc.vegalite_to_png(spec, scale=2)
        return vlc.vegalite_to_svg(spec).encode("utf-8")

    return render


# --- The sentence as models read it ---------------------------------------------------------------


def sentence_tokens(hint: str = "Type a sentence in the sidebar.") -> tuple[str, ...] | None:
    """The sidebar sentence as tokens, bounded by seqviz.text.prepare (with a note when it was cut);
    None, with ``hint`` shown, when there is nothing to read."""
    from seqviz.text import prepare

    result = prepare(sentence())
    if result.message:
        notice(result.message)
    if not result.tokens:
        st.info(hint, icon=":material/edit:")
        return None
    return tuple(result.tokens)


def marked_tokens(checked) -> str:
    """Markdown of a translation with the words that differ from the reference in red (text escaped)."""
    words = []
    for word, ok in zip(checked.output, checked.matches, strict=True):
        safe = escape_markdown(word)
        words.append(safe if ok else f":red[**{safe}**]")
    return " ".join(words) if words else "*(nothing)*"


@st.cache_data(max_entries=2, show_spinner="Running the chapter's code…")
def chapter_shapes():
    from seqviz.analysis.timing import chapter_shapes as compute

    return compute()


@st.cache_data(max_entries=1, show_spinner="Timing an LSTM layer against a self-attention layer…")
def forward_times():
    """Measured once per server; the page's "Measure again" clears this cache."""
    from seqviz.analysis.timing import forward_times as compute
    from seqviz.runtime import configure_torch

    configure_torch()  # one thread, as for every model here
    return compute()
