"""Home: what the lab is, the map of the story, and the sentence."""

import streamlit as st

from seqviz import ui
from seqviz.story import STORY

st.title("Sequences and the road to attention")
st.markdown(
    "An interactive lab for the textbook page *Sequences and the Road to Attention*. "
    "Each page takes one step of the chapter and lets you change the numbers: read a sentence one word "
    "at a time with a recurrent memory, watch that memory fade, then let a decoder look back at every "
    "word with attention. Nothing here is a picture: every table and chart is computed as you watch."
)

st.header("The sentence")
st.markdown(
    "Every page works on the sentence in the sidebar. It starts as the first of the chapter's two "
    "support emails; type your own, and copy the address bar to share exactly what you see."
)
ui.show_sentence("Now reading")

st.header("The map")
for number, page in enumerate(STORY, start=1):
    left, right = st.columns([1, 3], vertical_alignment="center")
    with left:
        st.page_link(page.script, label=f"{number}. {page.title}", icon=page.icon)
    with right:
        st.markdown(page.summary)

ui.share_box("")
