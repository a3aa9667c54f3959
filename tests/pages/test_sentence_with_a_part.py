"""A new sentence reruns the whole page even when a part's widget reports a change in the same interaction.

In the browser, a part's slider whose options follow the sentence (an output step) can send a changed value along with
the sentence box's change; its callback asks Streamlit to rerun only its part (seqviz.ui.rerun_part), and alone that
request would replace the page's rerun: the page kept the last sentence's translation while the address showed the new
one (seen on /what-if: every second sentence typed was not applied). Here both change in one interaction, as there."""

from conftest import all_text, set_sentence

FIRST, SECOND = "where is my red phone ?", "my parcel never arrived ."


def test_a_sentence_typed_with_a_parts_slider_moved_is_applied_on_what_if(open_page):
    at = set_sentence(open_page("app_pages/what_if.py"), FIRST)
    assert "où est mon téléphone rouge ?" in all_text(at)
    at.select_slider(key="nstep").set_value(1)  # the part's step slider, in the same interaction as the box
    at.sidebar.text_input(key="s").set_value(SECOND).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = all_text(at)
    assert "mon colis n' est jamais arrivé ." in shown and "où est mon téléphone rouge ?" not in shown


def test_a_sentence_typed_with_a_parts_slider_moved_is_applied_on_attention(open_page):
    at = set_sentence(open_page("app_pages/attention.py"), FIRST)
    at.select_slider(key="step").set_value(1)  # "Output word", in the one-step part
    at.sidebar.text_input(key="s").set_value(SECOND).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = all_text(at)
    assert "mon colis n' est jamais arrivé ." in shown and "où est mon téléphone rouge ?" not in shown
