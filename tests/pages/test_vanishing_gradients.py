from conftest import SENTENCES, all_text, figures_shown, set_sentence

PAGE = "app_pages/vanishing_gradients.py"


def test_saliency_jacobians_and_memory(open_page):
    at = open_page(PAGE)
    text = all_text(at)
    assert "σ_max(W_h)" in text and "for rnn η =" in text
    assert "Accuracy at distance 20 after 300 steps" in text
    assert figures_shown(at) == ["saliency", "jacobian", "memory-accuracy"]


def test_scaling_the_recurrent_weights(open_page):
    at = open_page(PAGE, T="50")
    at.select_slider(key="scale").set_value(3.0).run()
    assert not at.exception
    assert "rnn with W_h × 3: η =" in all_text(at)
    at.select_slider(key="scale").set_value(0.25).run()
    assert "vanish" in all_text(at)


def test_sentences_of_every_kind(open_page):
    at = open_page(PAGE, T="25")
    for sentence in SENTENCES:
        set_sentence(at, sentence)
    assert figures_shown(at) == ["saliency", "jacobian", "memory-accuracy"]


def test_moving_through_training(open_page):
    at = open_page(PAGE, T="25")
    at.select_slider(key="steps").set_value(2000).run()
    assert "Accuracy at distance 20 after 2000 steps" in all_text(at)


def test_explosion_is_called_only_when_measured(open_page):
    at = open_page(PAGE, T="50", scale="1.5")
    text = all_text(at)
    # η > 1 after scaling, but the measured gradient 20 steps back must decide what the page says
    assert "rnn with W_h × 1.5" in text
    assert ("it explodes" in text) != ("it still vanishes" in text)
