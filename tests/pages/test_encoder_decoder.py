from conftest import SENTENCES, all_text, figures_shown, set_sentence

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
    assert figures_shown(at) == ["translation-by-length"]


def test_sentence_outside_the_grammar_says_so(open_page):
    at = open_page(PAGE, s="the weather is lovely today")
    assert "no reference translation" in all_text(at)


def test_sentences_of_every_kind(open_page):
    at = open_page(PAGE)
    for sentence in SENTENCES:
        set_sentence(at, sentence)
    at.radio(key="metric").set_value("token accuracy").run()
    assert not at.exception


def test_unknown_words_are_named_once_per_vocabulary(open_page):
    """The shipped translators share one vocabulary: one line names the words they have never seen."""
    at = open_page(PAGE, s="where is my zebra ?")
    notes = [c.value for c in at.caption if c.value.startswith("Not in the vocabulary")]
    assert len(notes) == 1, notes
    assert "zebra" in notes[0]


def test_a_runaway_on_a_grammar_sentence_is_not_blamed_on_the_sentence(open_page, monkeypatch):
    """A sentence of the grammar has a reference: a model that loops on it failed, the sentence is not unusual.
    (The output limit is set to 0 here so that every translation counts as stopped at the limit.)"""
    from seqviz.ui import models

    monkeypatch.setattr(models, "output_limit", lambda n: 0)
    text = all_text(open_page(PAGE, s="where is my parcel ?"))
    assert "one of its task's own" in text and "unlike anything they were trained on" not in text
    text = all_text(open_page(PAGE, s="parcel parcel parcel"))
    assert "unlike anything they were trained on" in text and "one of its task's own" not in text


def test_a_text_of_two_sentences_is_said_to_be_read_as_one(open_page):
    at = open_page(PAGE, s="Where is my refund? The charger in my parcel never arrived.")
    assert any(c.value.startswith("Your text has 2 sentences") for c in at.caption)
    at = open_page(PAGE, s="where is my parcel ?")  # one sentence, its mark at the end
    assert not any(c.value.startswith("Your text has") for c in at.caption)


def test_a_sentence_mostly_unknown_to_the_model_gets_a_warning(open_page):
    at = open_page(PAGE, s="¿ dónde está mi paquete ? nunca llegó .")
    (warning,) = [w.value for w in at.warning if w.value.startswith("Not in the vocabulary")]
    assert "of these 9 tokens" in warning and "expect it to guess" in warning
    at = open_page(PAGE, s="where is my zebra ?")  # one word of five: a caption, not a warning
    assert not [w for w in at.warning if w.value.startswith("Not in the vocabulary")]
