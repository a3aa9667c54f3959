from conftest import SENTENCES, all_text, set_sentence

from seqviz.data.translation import CHAPTER_PAIRS

PAGE = "app_pages/encoder_decoder.py"


def test_the_six_chapter_pairs_are_exact_for_the_attention_models(open_page):
    at = open_page(PAGE)
    table = at.table[0].value
    assert list(table["English"]) == [english for english, _ in CHAPTER_PAIRS]
    for name in ("additive", "dot", "transformer-translator"):
        assert list(table[name]) == ["✓"] * 6, name


def test_sentence_in_the_grammar_has_a_reference(open_page):
    at = open_page(PAGE, s="where is my order ?")
    text = all_text(at)
    assert "où est ma commande ?" in text.replace("\\", "")
    assert "✓ exact" in text
    assert len(at.get("vega_lite_chart")) == 1


def test_sentence_outside_the_grammar_says_so(open_page):
    at = open_page(PAGE, s="the weather is lovely today")
    assert "no reference translation" in all_text(at)


def test_sentences_of_every_kind(open_page):
    at = open_page(PAGE)
    for sentence in SENTENCES:
        set_sentence(at, sentence)
    at.radio(key="metric").set_value("token accuracy").run()
    assert not at.exception
