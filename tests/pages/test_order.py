from conftest import SENTENCES, all_text, figures_shown, set_sentence

PAGE = "app_pages/order.py"


def test_both_emails_bags_predictions_and_twins(open_page):
    at = open_page(PAGE)
    text = all_text(at)
    assert "The parcel arrived, but never the charger that was supposed to be in it." in [t.value for t in at.text]
    assert "The charger arrived, but never the parcel that was supposed to have it." in [t.value for t in at.text]
    assert "0.915" in text  # cosine of the two chapter emails' count vectors
    assert "Right on Email B: rnn, gru, lstm, transformer" in text  # bow cannot read order
    assert "100%" in text  # naive Bayes gives both twins the same answer in every pair
    assert figures_shown(at) == ["bag-of-words", *["probabilities"] * 3, "order-twins"]


def test_sentences_of_every_kind(open_page):
    at = open_page(PAGE)
    for sentence in SENTENCES:
        set_sentence(at, sentence)
        assert len(at.get("vega_lite_chart")) >= 4
    set_sentence(at, "zzz qqq xyzzy")
    assert "read as <unk>: zzz, qqq, xyzzy" in all_text(at)
