"""seqviz: the router. Page config, navigation over app_pages/, this browser's lab, the sidebar's shared sentence and
your models."""

import streamlit as st

from seqviz import ui
from seqviz.story import HOME, STORY
from seqviz.ui import lab, training, yours


def main() -> None:
    st.set_page_config(page_title="seqviz: sequences and the road to attention", page_icon=":material/route:",
                       layout="wide")
    pages = [st.Page(HOME.script, title=HOME.title, icon=HOME.icon, default=True)] + [
        st.Page(p.script, title=p.title, icon=p.icon, url_path=p.url_path) for p in STORY
    ] + [st.Page("app_pages/class_board.py", title="Class board", icon=":material/groups:", url_path="class")]
    page = st.navigation(pages)
    ui.page_style()
    lab.begin()
    st.sidebar.title("seqviz")
    ui.sentence_input()
    yours.sidebar()
    training.sidebar_status()
    ui.moved_notice()
    page.run()


# Streamlit runs this file as __main__; the training workers, started by multiprocessing's spawn, import it again
# as __mp_main__ and must not run the app.
if __name__ == "__main__":
    main()
