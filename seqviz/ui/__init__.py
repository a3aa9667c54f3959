"""The only streamlit-aware part of seqviz, and what a page calls: the story's text and these.

By concern: :mod:`~seqviz.ui.sentence_box` (the sidebar's sentence and its tokens), :mod:`~seqviz.ui.figures`
(figures drawn with their downloads: ``show`` a view's, ``draw`` one), :mod:`~seqviz.ui.share` (the share box),
:mod:`~seqviz.ui.notices` (visitor text shown as itself, warnings, the moved visitor's toast), and here the
layout every page shares and its parts that rerun alone; :mod:`seqviz.ui.models` for models. Pages hold no model
math and build no chart themselves.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from seqviz.charts.base import position_labels
from seqviz.ui import screen
from seqviz.ui.figures import draw, show, slug
from seqviz.ui.notices import escape_markdown, moved_notice, notice
from seqviz.ui.sentence_box import (
    DEFAULT_SENTENCE,
    SENTENCE_KEY,
    marked_tokens,
    sentence,
    sentence_input,
    sentence_tokens,
    show_sentence,
)
from seqviz.ui.share import SHARE_PART, share_box

# A chart drawn at its own width (a heatmap of a long sentence, panels side by side) scrolls inside its own
# box on a narrow screen, instead of pushing the page sideways; on a phone, heatmaps wrap their words into blocks
# instead (seqviz.ui.screen, seqviz.charts.heatmaps.in_blocks) and none scrolls.
# Code's highlighted words: Streamlit's own colours are fixed whatever the theme (keywords 3.73:1, numbers 2.58:1
# on the light code box); each is mixed here from an Okabe-Ito hue and the code's text colour (the theme's), so it
# keeps its hue and reads at 5:1 or more in the light and the dark theme alike.
_PAGE_STYLE = """<style>
[data-testid="stVegaLiteChart"] { max-width: 100%; overflow-x: auto; overflow-y: hidden; }
.st-key-_lab_cookie { display: none; }  /* the lab's cookie keeper (seqviz.ui.lab) draws nothing: no gap either */
.st-key-_scrollables { display: none; }  /* the marker of boxes that scroll sideways (below): nothing either */
.st-key-_paste { display: none; }  /* the sentence box's paste keeper (seqviz.ui.sentence_box): nothing either */
.st-key-_screen { display: none; }  /* the screen's width teller (seqviz.ui.screen): nothing either */
/* The sentence box's "Press Enter to apply · 66/400" sits in the box's lower right: a line of its own under the
   typed text, which it covered in a sidebar (a phone's above all). */
.st-key-s input { padding-bottom: 1.5rem; }
.st-key-s [data-testid="stTextInputRootElement"] { height: auto; }  /* the box grows with it: none overflows */
/* A widget's help "?" is a 16 px button beside its label: a target of at least 24 px (WCAG 2.5.8), the glyph
   unchanged. */
[data-testid="stTooltipIcon"] button { min-width: 24px; min-height: 24px; display: inline-flex;
  align-items: center; justify-content: center; }
/* A picker full of chosen models left its typing box 20 px wide on a phone: a target at least 24 px (WCAG 2.5.8). */
[data-testid="stMultiSelect"] input[role="combobox"] { min-width: 24px; }
/* White on the dark theme's primary blue (#56B4E9) reads 2.3:1: chosen models' tags and primary buttons write in
   the dark background's colour there (light-dark() follows the colour scheme Streamlit sets for its theme). */
[data-testid="stMultiSelect"] [data-tag], [data-testid="stMultiSelect"] [data-tag] *,
[data-testid="stBaseButton-primary"], [data-testid="stBaseButton-primary"] * {
  color: light-dark(#FFFFFF, #10141B) !important; }
/* A box that scrolls sideways says so where it starts (marked by the component below; on a phone: a formula, a
   heatmap of a long sentence, a wide table), the hint staying in view while the box scrolls; hidden from screen
   readers, which hear the box's own name ("Formula, scrolls sideways"). */
[data-seqviz-overflows]::before {
  content: "\\2194\\FE0E  scroll sideways for the rest" / ""; display: block; position: sticky; left: 0;
  width: max-content; font-size: 0.8rem; line-height: 1.6; color: color-mix(in srgb, currentColor 70%, transparent);
  font-family: "Source Sans", sans-serif; font-style: normal; text-align: left; }
/* Streamlit shows a chart's toolbar and a heading's link only under the mouse, yet Tab reaches their buttons: they
   show while they hold the focus, so a keyboard's focus is never on something unseen (WCAG 2.4.7). */
[data-testid="stElementToolbar"]:focus-within, [data-testid="stHeaderActionElements"] a:focus {
  opacity: 1 !important; transition: none !important; }
[data-testid="stCode"] .token {  /* over Streamlit's own token colours, which are more specific */
  --hue: currentColor; color: color-mix(in srgb, var(--hue) 62%, currentColor) !important; }
[data-testid="stCode"] .token:is(.keyword, .function, .class-name) { --hue: #0072B2; }
[data-testid="stCode"] .token:is(.number, .boolean, .builtin, .constant) { --hue: #D55E00; }
[data-testid="stCode"] .token:is(.string, .char) { --hue: #009E73; }
[data-testid="stCode"] .token.comment { --hue: #808495; font-style: italic; }
</style>"""

# A box that scrolls sideways (a formula, code, a chart wider than the screen) must be reachable by keyboard to be
# scrolled (WCAG 2.1.1; axe's scrollable-region-focusable): while it scrolls, it takes the focus (tabindex=0) as a
# region named for what it holds; once it fits again, it is a plain box. Streamlit gives these boxes no tabindex
# of their own, so this component (app-page script, no iframe; it draws nothing) marks them as they appear and
# as the window changes size.
_SCROLLABLES_JS = """
export default function () {
  if (window.__seqvizScrollables) return;
  window.__seqvizScrollables = true;
  const BOXES = '.katex-display, [data-testid=stCode] pre, [data-testid=stCode] > div, '
              + '[data-testid=stVegaLiteChart], [data-testid=stTable] > div, [data-testid=stMarkdownContainer] table, '
              + 'td > [data-testid=stMarkdownContainer], th > [data-testid=stMarkdownContainer]';
  const FOCUSABLE = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';
  const what = (box) => box.matches('.katex-display') ? 'Formula'
    : box.closest('[data-testid=stCode]') ? 'Code'
    : box.matches('[data-testid=stVegaLiteChart]') ? 'Chart'
    : box.matches('[data-testid=stMarkdownContainer]') ? 'Table cell' : 'Table';
  const mark = () => {
    for (const box of document.querySelectorAll(BOXES)) {
      const scrolls = /auto|scroll/.test(getComputedStyle(box).overflowX) && box.scrollWidth > box.clientWidth;
      const marked = box.dataset.seqvizScroll !== undefined;
      // its hint (CSS), only where a real part is hidden (a formula in a column can overflow by a pixel or two);
      // written only when it changes, so a page at rest stays still
      const hides = scrolls && box.scrollWidth > box.clientWidth + 8;
      if (hides !== (box.dataset.seqvizOverflows !== undefined)) {
        if (hides) box.dataset.seqvizOverflows = ''; else delete box.dataset.seqvizOverflows;
      }
      if (scrolls && !marked && !box.querySelector(FOCUSABLE) && !box.hasAttribute('tabindex')) {
        box.dataset.seqvizScroll = box.getAttribute('aria-label') ?? '';
        box.setAttribute('tabindex', '0');
        box.setAttribute('role', box.getAttribute('role') || 'region');
        if (!box.hasAttribute('aria-label')) box.setAttribute('aria-label', what(box) + ', scrolls sideways');
      } else if (!scrolls && marked) {
        box.removeAttribute('tabindex');
        if (box.getAttribute('role') === 'region') box.removeAttribute('role');
        if (box.dataset.seqvizScroll === '') box.removeAttribute('aria-label');
        delete box.dataset.seqvizScroll;
      }
    }
  };
  let queued = false;
  const soon = () => { if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; mark(); }); } };
  new MutationObserver(soon).observe(document.body, {childList: true, subtree: true});
  new ResizeObserver(soon).observe(document.body);
  window.addEventListener('resize', soon);
  document.fonts.ready.then(soon);
  setInterval(soon, 2000);  // a box can start to scroll with no change to the page's nodes (a late font, a table)
  soon();
}
"""
_SCROLLABLES = st.components.v2.component("seqviz_scrollables", js=_SCROLLABLES_JS, css=":host { display: none; }")


def page_style() -> None:
    """Layout rules every page shares, the marking of boxes that scroll sideways, and the teller of a narrow screen
    (seqviz.ui.screen) (app.py calls it once per run)."""
    st.html(_PAGE_STYLE)
    with st.sidebar:
        _SCROLLABLES(key="_scrollables", width="content", height=0)
    screen.watch()


def table(data: pd.DataFrame, number_format: str | Callable, text_columns: tuple[str, ...] = (),
          hide_index: bool = True) -> None:
    """A small static table. ``st.table`` is plain HTML; the interactive grid of ``st.dataframe`` refreshes a
    hidden copy for screen readers 0.2 s after every rerun. Its cells are Markdown, so visitor text in
    ``text_columns`` is escaped."""
    shown = data.assign(**{column: data[column].map(escape_markdown) for column in text_columns})
    numbers = {column: number_format for column in data.columns if column not in text_columns}
    st.table(shown.style.format(numbers), hide_index=hide_index)


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


__all__ = ["DEFAULT_SENTENCE", "SENTENCE_KEY", "SHARE_PART", "chapter_shapes", "draw", "escape_markdown",
           "forward_times", "marked_tokens", "moved_notice", "notice", "output_word", "page_style", "part",
           "rerun_part", "sentence", "sentence_input", "sentence_tokens", "share_box", "show", "show_sentence", "slug",
           "table"]
