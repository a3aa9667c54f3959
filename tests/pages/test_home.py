from conftest import SENTENCES, all_text, set_sentence

from seqviz.story import STORY
from seqviz.ui import DEFAULT_SENTENCE


def test_home_shows_the_default_sentence_and_the_map(open_page):
    at = open_page()
    assert at.sidebar.text_input(key="s").label == "Sentence"
    assert at.sidebar.text_input(key="s").value == DEFAULT_SENTENCE
    text = all_text(at)
    assert DEFAULT_SENTENCE in text
    for page in STORY:
        assert page.summary in text


def test_sentence_from_the_url(open_page):
    at = open_page(s="where is my parcel")
    assert at.sidebar.text_input(key="s").value == "where is my parcel"
    assert "where is my parcel" in [t.value for t in at.text]


def test_typed_sentences_never_break_the_page(open_page):
    at = open_page()
    for sentence in SENTENCES:
        set_sentence(at, sentence)
        shown = [t.value for t in at.text]
        # shown as plain text, never Markdown; long is cut; an empty box says so
        if sentence.strip():
            assert shown[0] == sentence[:400]
        else:
            assert not shown and "The sentence box is empty" in all_text(at)
