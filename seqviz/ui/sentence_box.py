"""The sidebar's one sentence: its box (bound to the address), its text, its tokens as models read them."""

from __future__ import annotations

import streamlit as st

from seqviz.limits import MAX_CHARS
from seqviz.ui.notices import escape_markdown, notice

SENTENCE_KEY = "s"  # also the URL query parameter: /attention?s=where+is+my+parcel
DEFAULT_SENTENCE = "The parcel arrived, but never the charger that was supposed to be in it."


# A paste longer than the box holds: Streamlit's box ignores it whole (its max_chars check drops the change). This
# keeps what fits, where the visitor pasted it, and tells the server how many characters were left out (a count, no
# text: the component is given only the limit). It draws nothing.
# On a phone the sidebar covers the page: once Enter has applied the sentence (Streamlit's own handler first), it
# closes, as Streamlit closes it after a tap on a page's link, and the phone's keyboard goes, so the visitor sees
# the page take the sentence.
_PASTE_JS = """
export default function ({ data, setTriggerValue }) {
  window.__seqvizPaste = { limit: data.limit, tell: setTriggerValue };
  if (window.__seqvizPasteHooked) return;
  window.__seqvizPasteHooked = true;
  document.addEventListener("paste", (event) => {
    const box = event.target, paste = window.__seqvizPaste;
    if (!(box instanceof HTMLInputElement) || box.getAttribute("aria-label") !== "Sentence") return;
    const text = (event.clipboardData && event.clipboardData.getData("text")) || "";
    const start = box.selectionStart ?? box.value.length, end = box.selectionEnd ?? start;
    const room = paste.limit - (box.value.length - (end - start));
    if (text.length <= room) return;
    event.preventDefault();
    const kept = text.slice(0, Math.max(0, room));
    const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
    set.call(box, box.value.slice(0, start) + kept + box.value.slice(end));
    box.dispatchEvent(new Event("input", { bubbles: true }));
    paste.tell("cut", text.length - kept.length);
  }, true);
  document.addEventListener("keydown", (event) => {
    const box = event.target;
    if (event.key !== "Enter" || !(box instanceof HTMLInputElement) || box.getAttribute("aria-label") !== "Sentence"
        || !window.matchMedia("(max-width: 640px)").matches) return;
    setTimeout(() => {
      box.blur();
      const close = document.querySelector('[data-testid=stSidebarCollapseButton] button');
      if (close && document.querySelector('[data-testid=stSidebar]')?.getBoundingClientRect().width > 0) close.click();
    }, 0);
  });
}
"""
_PASTE = st.components.v2.component("seqviz_paste", js=_PASTE_JS, css=":host { display: none; }")
_PASTE_KEY = "_paste"
_CUT_KEY = "_paste_cut"  # (characters a paste left out, the sentence before it), while the paste's sentence stands


def _pasted() -> None:
    cut = getattr(st.session_state.get(_PASTE_KEY), "cut", None)
    if isinstance(cut, int | float) and not isinstance(cut, bool) and 0 < cut < 10**9:  # (a JS number)
        st.session_state[_CUT_KEY] = (int(cut), sentence())  # (the box is taken on Enter: until then, the old)


def _typed() -> None:
    """The sentence box's own callback, which does nothing and must stay: a new sentence reruns the whole page.

    A part's widget whose options follow the sentence (an output step's slider) can report a change in the same
    interaction as the box (its old value no longer fits), and its ``on_change`` asks Streamlit to rerun only its
    part (seqviz.ui.rerun_part). Alone, that request would replace the whole page's rerun, and the page would keep
    showing the last sentence. A callback that returns normally beside it asks for the whole page, and Streamlit
    then reruns the whole page."""


def sentence_input() -> None:
    """The sidebar's one sentence, bound to ?s= so a copied address reopens the same view."""
    with st.sidebar:
        _PASTE(key=_PASTE_KEY, on_cut_change=_pasted, width="content", height=0, data={"limit": MAX_CHARS})
    st.sidebar.text_input(
        "Sentence",
        value=DEFAULT_SENTENCE,
        key=SENTENCE_KEY,
        max_chars=MAX_CHARS,
        bind="query-params",
        on_change=_typed,
        help="Every page works on this sentence. It is kept in the address bar, so a copied link "
             "opens the same page with the same sentence.",
    )


def sentence() -> str:
    """The current sentence, bounded (empty when the visitor cleared the box)."""
    value = st.session_state.get(SENTENCE_KEY, DEFAULT_SENTENCE)
    return value[:MAX_CHARS] if isinstance(value, str) else DEFAULT_SENTENCE


def show_sentence(label: str = "Sentence") -> None:
    """Echo the sentence as plain text (never Markdown)."""
    st.caption(label)
    if sentence().strip():
        st.text(sentence())
    else:
        st.info("The sentence box is empty: type a sentence in the sidebar.", icon=":material/edit:")


def sentence_tokens(hint: str = "Type a sentence in the sidebar.") -> tuple[str, ...] | None:
    """The sidebar sentence as tokens, bounded by seqviz.text.prepare (with a note when it was cut);
    None, with ``hint`` shown, when there is nothing to read."""
    from seqviz.text import prepare

    result = prepare(sentence())
    if result.message:
        notice(result.message)
    cut, before = st.session_state.get(_CUT_KEY) or (0, None)
    if cut and len(sentence()) == MAX_CHARS and sentence() != before:
        notice(f"Only the first {MAX_CHARS} characters of what you pasted were kept ({cut} more were left out).")
    elif cut and sentence() != before:  # the visitor has since typed another sentence
        st.session_state.pop(_CUT_KEY, None)
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


