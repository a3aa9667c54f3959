"""/class: a class trains and experiments together. A teacher starts a class; students join by its link, post their
finished runs to its board, and draw the chapter's curves together from their runs."""

import streamlit as st

from seqviz.store import StoreUnavailable
from seqviz.ui import board, classroom, lab

st.title("Class board")
st.markdown(
    "A class works as one here. The teacher starts a class and gets a link for the students; opening it joins the "
    "class, and everyone keeps using every page as before. Each student trains a run on /train and posts it to the "
    "board with a nickname, and the board draws the class's runs together: one held-out measure against one setting, "
    "or exact match against sentence length. With a **class experiment** each student trains one value of one "
    "setting, so the class draws the chapter's curves: how a plain encoder-decoder's fixed vector is a bottleneck "
    "until its hidden size is large, and how attention holds exact match up as sentences grow. Any classmate's "
    "model can be added to *Your models* and compared on every page."
)

if lab.lab_id() is None:
    classroom.unavailable(lab.problem())
else:
    try:
        opened = classroom.opened()
        if opened is None:
            classroom.start_or_join()
        else:
            found, mine = opened
            classroom.header(found, mine)
            classroom.teacher_panel(found, mine)
            board.show(found, mine)
    except StoreUnavailable as error:
        lab.failed(error)
        classroom.unavailable(str(error))
