"""The sidebar's one sentence: its box (bound to the address), its text, its tokens as models read them."""

from __future__ import annotations

import streamlit as st

from seqviz.limits import MAX_CHARS
from seqviz.ui.notices import escape_markdown, notice

SENTENCE_KEY = "s"  # also the URL query parameter: /attention?s=where+is+my+parcel
DEFAULT_SENTENCE = "The parcel arrived, but never the charger that was supposed to be in it."


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


