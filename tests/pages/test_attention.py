from conftest import SENTENCES, all_text, figures_shown, set_sentence

PAGE = "app_pages/attention.py"


def weights(at, table: int = 0) -> list[str]:
    return [f"{w:.3f}" for w in at.table[table].value["weight α"]]


def test_defaults_are_the_chapter_numbers(open_page):
    at = open_page(PAGE)
    assert weights(at) == ["0.474", "0.174", "0.351"]
    text = all_text(at)
    assert "(0.720, 0.420)" in text
    assert "5.732" in text
    assert figures_shown(at) == ["attention-weights", "context-mix", "alignment", "alignment", "attention-step"]


def test_self_test_shows_new_weights_and_says_what_changed(open_page):
    at = open_page(PAGE)
    assert weights(at, 1) == ["0.174", "0.474", "0.351"]
    assert "towards “never”" in all_text(at)


def test_every_vector_and_word_is_editable(open_page):
    at = open_page(PAGE)
    at.number_input(key="q1").set_value(0.0).run()
    at.number_input(key="q2").set_value(1.0).run()
    assert weights(at) == ["0.174", "0.474", "0.351"]
    assert "(0.420, 0.720)" in all_text(at)
    at.number_input(key="k3a").set_value(2.0).run()
    at.text_input(key="w3").set_value("charger").run()
    assert list(at.table[0].value["word"]) == ["parcel", "never", "charger"]


def test_odd_words_and_duplicates(open_page):
    at = open_page(PAGE)
    at.text_input(key="w1").set_value("never").run()
    at.text_input(key="w2").set_value("   ").run()
    at.text_input(key="w3").set_value("**[x](y)**").run()
    assert not at.exception
    # The table's cells are Markdown: the typed word is escaped, so it prints as itself.
    assert list(at.table[0].value["word"]) == ["never", "word 2", r"\*\*\[x\]\(y\)\*\*"]


def test_sentence_from_url_and_typed(open_page):
    at = open_page(PAGE, s="where is my parcel")
    assert at.sidebar.text_input(key="s").value == "where is my parcel"
    assert any("attention?s=where+is+my+parcel" in c.value for c in at.sidebar.code)
    for sentence in SENTENCES:
        set_sentence(at, sentence)
    assert weights(at) == ["0.474", "0.174", "0.351"]


def test_real_model_alignment_and_steps(open_page):
    at = open_page(PAGE, s="my red phone never arrived .")
    text = all_text(at).replace("\\", "")
    assert "mon téléphone rouge n' est jamais arrivé ." in text
    assert figures_shown(at) == ["attention-weights", "context-mix", "alignment", "alignment", "attention-step"]
    at.select_slider(key="step").set_value(1).run()
    assert "The context for “téléphone”" in all_text(at).replace("\\", "")


def test_the_transformer_translator_aligns_too(open_page):
    at = open_page(PAGE, alignment="transformer-translator", s="where is my parcel ?")
    assert at.multiselect(key="alignment").value == ["transformer-translator"]
    # the worked example, and the transformer's cross-attention averaged over heads (no per-step detail)
    assert figures_shown(at) == ["attention-weights", "context-mix", "alignment"]


def test_a_runaway_translation_is_stopped_and_said(open_page):
    at = open_page(PAGE, s="parcel")  # outside the grammar: the additive model repeats "colis" until stopped
    assert "Stopped at 7 words without an end-of-sentence marker" in all_text(at)


def test_worked_example_travels_in_the_address(open_page):
    at = open_page(PAGE, q1="0", q2="1")
    assert weights(at) == ["0.174", "0.474", "0.351"]
