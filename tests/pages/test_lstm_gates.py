from conftest import SENTENCES, all_text, figures_shown, set_sentence

PAGE = "app_pages/lstm_gates.py"


def test_gates_of_every_model_with_an_lstm(open_page):
    at = open_page(PAGE)
    picker = at.selectbox(key="gates")
    assert picker.value == "lstm"
    assert picker.options == ["lstm", "memory-lstm", "plain", "additive", "dot"]
    assert figures_shown(at) == ["gates", "unit-lines", "mean-forget", "units-like-this"]
    assert "forget gate is above 0.9" in all_text(at)
    for name in picker.options[1:]:
        at.selectbox(key="gates").set_value(name).run()
        assert not at.exception, name
        assert figures_shown(at) == ["gates", "unit-lines", "mean-forget", "units-like-this"], name


def test_model_from_the_address(open_page):
    at = open_page(PAGE, gates="additive")
    assert at.selectbox(key="gates").value == "additive"
    assert "its encoder's LSTM, forward direction" in all_text(at)
    assert figures_shown(at) == ["gates", "unit-lines", "mean-forget", "units-like-this"]


def test_a_model_the_address_cannot_name_falls_back_to_the_default(open_page):
    at = open_page(PAGE, gates="yours-0123456789ab")
    assert at.selectbox(key="gates").value == "lstm"
    assert figures_shown(at) == ["gates", "unit-lines", "mean-forget", "units-like-this"]


def test_unit_picker_and_unit_count(open_page):
    at = open_page(PAGE)
    at.slider(key="units").set_value(8).run()
    assert len(at.selectbox(key="unit").options) == 8
    at.selectbox(key="unit").set_value(at.selectbox(key="unit").options[-1]).run()
    assert not at.exception


def test_sentences_of_every_kind(open_page):
    at = open_page(PAGE)
    for sentence in SENTENCES:
        set_sentence(at, sentence)
        assert not at.exception


def test_units_like_this_searches_held_out_sentences_only_when_asked(open_page):
    at = open_page(PAGE)  # the default sentence: "the parcel", threshold 0.3
    text = all_text(at)
    assert "units keep their cell state above 0.3 at every word of “the parcel”" in text
    assert "held-out sentences searched" not in text and not at.table  # nothing searched until asked
    assert at.toggle(key="search").value is False

    at.toggle(key="search").set_value(True).run()
    assert not at.exception
    assert "of the 500 held-out sentences searched have a span of 2 or more words" in all_text(at)
    assert "⟦" in at.table[-1].value.iloc[0, 0]


def test_units_like_this_from_the_address(open_page):
    at = open_page(PAGE, gates="additive", **{"from": "08 charger", "words": "3", "above": "0.5", "search": "true"})
    assert (at.select_slider(key="from").value, at.slider(key="words").value) == (7, 3)
    assert at.slider(key="above").value == 0.5
    text = all_text(at)
    assert "keep their cell state above 0.5 at every word of “charger that was”" in text
    assert "held-out sentences searched have a span of 3 or more words" in text


def test_a_phrase_past_the_end_stops_at_the_last_word(open_page):
    at = open_page(PAGE, s="where is my parcel", **{"from": "03 my", "words": "8", "above": "0.0"})
    assert "at every word of “my parcel”" in all_text(at)


def test_no_unit_above_the_threshold_says_so_and_draws_the_closest(open_page):
    at = open_page(PAGE, above="3.0", words="8")
    assert "No unit's cell state stays above 3 at every word" in all_text(at)
    assert "drawn are the 10 that come closest" in all_text(at)
    assert figures_shown(at) == ["gates", "unit-lines", "mean-forget", "units-like-this"]
    assert "search" not in [t.key for t in at.toggle]  # nothing to search for
