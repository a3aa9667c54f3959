from conftest import SENTENCES, all_text, set_sentence

PAGE = "app_pages/lstm_gates.py"


def test_gates_for_both_models(open_page):
    at = open_page(PAGE)
    assert len(at.get("vega_lite_chart")) == 3
    assert "forget gate is above 0.9" in all_text(at)
    at.radio(key="model").set_value("translator encoder").run()
    assert not at.exception
    assert len(at.get("vega_lite_chart")) == 3


def test_model_from_the_address(open_page):
    at = open_page(PAGE, model="translator encoder")
    assert at.radio(key="model").value == "translator encoder"
    assert "The attention translator's LSTM encoder" in all_text(at)
    assert len(at.get("vega_lite_chart")) == 3


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
