from conftest import SENTENCES, all_text, figures_shown, set_sentence

PAGE = "app_pages/lstm_gates.py"


def test_gates_of_every_model_with_an_lstm(open_page):
    at = open_page(PAGE)
    picker = at.selectbox(key="gates")
    assert picker.value == "lstm"
    assert picker.options == ["lstm", "memory-lstm", "plain", "additive", "dot"]
    assert figures_shown(at) == ["gates", "unit-lines", "mean-forget"]
    assert "forget gate is above 0.9" in all_text(at)
    for name in picker.options[1:]:
        at.selectbox(key="gates").set_value(name).run()
        assert not at.exception, name
        assert figures_shown(at) == ["gates", "unit-lines", "mean-forget"], name


def test_model_from_the_address(open_page):
    at = open_page(PAGE, gates="additive")
    assert at.selectbox(key="gates").value == "additive"
    assert "its encoder's LSTM, forward direction" in all_text(at)
    assert figures_shown(at) == ["gates", "unit-lines", "mean-forget"]


def test_a_model_the_address_cannot_name_falls_back_to_the_default(open_page):
    at = open_page(PAGE, gates="yours-0123456789ab")
    assert at.selectbox(key="gates").value == "lstm"
    assert figures_shown(at) == ["gates", "unit-lines", "mean-forget"]


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
