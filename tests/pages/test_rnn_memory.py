from conftest import SENTENCES, all_text, figures_shown, set_sentence

PAGE = "app_pages/rnn_memory.py"


def hidden_row(at) -> list[str]:
    table = at.table[0].value
    return [f"{v:.3f}" for v in table.loc["memory hₜ"]]


def test_defaults_show_the_chapter_row_and_figure(open_page):
    at = open_page(PAGE)
    assert hidden_row(at) == ["0.762", "0.363", "0.180", "0.090", "0.045", "0.022"]
    text = all_text(at)
    assert "3.0e-09" in text
    assert "0.477" in text  # the self-test answer quotes the live ratio h2/h1
    assert figures_shown(at) == ["tiny-rnn-memory", "tiny-rnn-gradient"]


def test_every_input_can_change(open_page):
    at = open_page(PAGE)
    at.slider(key="n").set_value(25).run()
    assert len(hidden_row(at)) == 25
    assert "20 steps back the product is" in all_text(at)
    at.slider(key="w").set_value(1.5).run()
    at.selectbox(key="f").set_value("identity").run()
    assert not at.exception
    assert "exploding" in all_text(at)
    assert hidden_row(at)[:3] == ["1.000", "1.500", "2.250"]
    at.text_input(key="x").set_value("0, 2").run()
    assert hidden_row(at)[:2] == ["0.000", "2.000"]


def test_tanh_saturation_is_explained(open_page):
    at = open_page(PAGE, w="2.5", n="30", x="3 3 3 3 3 3 3 3 3 3")
    assert "saturated" in all_text(at)


def test_bad_inputs_warn_and_keep_working(open_page):
    at = open_page(PAGE)
    for typed in ["one two", "1e999", "", "1 " * 100, "<b>1</b>"]:
        at.text_input(key="x").set_value(typed).run()
        assert not at.exception
        assert len(at.table) == 1
    assert at.warning  # the last one was not numbers


def test_hostile_url_values_fall_back_to_defaults(open_page):
    at = open_page(PAGE, w="abc", n="999", f="relu", x="%00")
    assert at.slider(key="w").value == 0.5
    assert at.selectbox(key="f").value == "tanh"
    assert not at.exception


def test_sentence_changes_do_not_break_the_page(open_page):
    at = open_page(PAGE)
    for sentence in SENTENCES:
        set_sentence(at, sentence)
    assert hidden_row(at)[0] == "0.762"
