"""Figures on the page: a :class:`seqviz.charts.Figure` drawn as a Vega-Lite chart with its downloads (CSV, PNG,
SVG), and a view's figures of some traces."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable

import altair as alt
import pandas as pd
import streamlit as st

from seqviz import charts
from seqviz.charts.base import LEGEND_ROW_PX, TABLE, draws_table, legend_rows, wrap_titles
from seqviz.charts.describe import describe
from seqviz.ui.screen import narrow

# Altair checks every chart part against the Vega-Lite schema as it is built, then the whole chart again
# when it is turned into a spec: about half of a page's script time. seqviz's charts are checked once, by the
# unit tests (tests/unit/test_charts.py turns every chart into a validated spec); the server skips both.
alt.utils.schemapi.disable_debug_mode()

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
    A screen reader reads the chart as its text alternative (seqviz.charts.describe: its title and its table's main
    numbers), not as "Vega visualization" or a jumble of tick labels; the switch beside the downloads shows the
    table itself, which the keyboard reaches and moves through.
    On a narrow screen (seqviz.ui.screen) a template with a phone form is drawn in that form (``phone=True``: a
    heatmap's words wrapped into blocks that fit the screen, bar panels two a row; not past its ``phone_max_rows``,
    for a heatmap PHONE_MAX_CELLS, too tall for a phone's canvas); the table, and its CSV, are the same.
    """
    kwargs = dict(figure.kwargs)
    most = getattr(figure.make, "phone_max_rows", None)
    if getattr(figure.make, "phone_form", False) and narrow() and (most is None or len(figure.table) <= most):
        kwargs["phone"] = True  # (seqviz.charts.base.has_phone_form)
    template = _template(f"{figure.make.__module__}.{figure.make.__qualname__}", tuple(figure.args), kwargs,
                         figure.make)
    spec = _spec_of(template)
    spec = {**spec, "usermeta": {**spec.get("usermeta", {}), "seqviz": {"figure": figure.name}}}  # (keeps embedOptions)
    table = figure.table if draws_table(spec) else None
    if table is not None:
        # Keep the chart's own fixed tables (a reference point, say) beside the sentence's.
        spec = {**spec, "datasets": {**spec.get("datasets", {}), TABLE: table}}
    alt_text = describe(spec, figure.table)  # it includes the spec's own description (a heatmap's), which it replaces
    spec.pop("description", None)
    st.vega_lite_chart(spec=spec, width="content" if _has_own_width(template) else "stretch",
                       height=_height_of(template, spec), alt=alt_text)
    row = st.container(horizontal=True)
    row.download_button("CSV", data=_csv_of(figure.table), file_name=f"{name}.csv", mime="text/csv",
                        key=f"csv-{name}", icon=":material/download:", on_click="ignore")
    row.download_button("PNG", data=_lazy_image(template, table, "png"), file_name=f"{name}.png", mime="image/png",
                        key=f"png-{name}", icon=":material/image:", on_click="ignore")
    row.download_button("SVG", data=_lazy_image(template, table, "svg"), file_name=f"{name}.svg",
                        mime="image/svg+xml", key=f"svg-{name}", icon=":material/draw:", on_click="ignore")
    # The numbers themselves, on the page, for a keyboard or a screen reader (WCAG 1.1.1): the table the chart
    # draws, sent only when asked for.
    if row.toggle("Table", key=f"table-{name}", help="Show the chart's numbers as a table"):
        st.dataframe(figure.table, hide_index=True, height=min(35 * (len(figure.table) + 1) + 3, 400))


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


