"""/explain: attention beside what the output depended on, for translators and for the attention classifier."""

import re

import pytest
from checkpoint_files import tiny_checkpoint
from conftest import APP, all_text, figures_shown, set_sentence
from streamlit.testing.v1 import AppTest

from seqviz import views, zoo
from seqviz.analysis.explain import explain_classification, explain_translation
from seqviz.charts.explain import MEASURE_NAMES
from seqviz.data.emails import CHAPTER_EMAILS
from seqviz.text import tokenize

PAGE = "app_pages/explain.py"


def plain(at) -> str:
    return all_text(at).replace("\\", "")


@pytest.fixture(scope="module", autouse=True)
def held_out_studies():
    """The page's held-out studies are computed once per server, by its first visitor's run (seqviz.ui.models
    caches them): open the page once, with the time a loaded machine needs for them, so that each test's runs
    read them from the cache within the usual 60 s."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]


def test_the_sentences_numbers_on_screen_are_the_analysis_numbers(open_page):
    at = open_page(PAGE, s="where is my order ?")
    text = plain(at)
    for name in ("additive", "transformer-translator"):
        checkpoint = zoo.load(name)
        explained = explain_translation(checkpoint.model, checkpoint.vocabularies, "where is my order ?".split())
        assert f"{name} writes “{' '.join(explained.out_tokens)}”." in text.replace("*", "")
        summary = views.get("explain-translation").summary(explained).split("\n")
        assert len(summary) == 5 and all(line in text for line in summary)  # four measures, and completeness
        assert f"against {MEASURE_NAMES['integrated_gradients']}: τ {explained.mean('integrated_gradients'):+.2f}" \
            in text
    classifier = zoo.load("attention-lstm")
    email = explain_classification(classifier.model, classifier.vocabularies["tokens"], tokenize(CHAPTER_EMAILS[0][0]))
    assert f"Email A: It says {email.predicted} (p = {email.p_predicted:.5f})" in text.replace("*", "")
    for heading in ("1. A translator", "2. The same over held-out", "3. Does the output depend", "4. An email",
                    "The permutation test", "5. What “it” points back to", "What these models say"):
        assert heading in text
    assert "nan" not in text.lower().split() and "median" not in text


def test_charts_and_takeaway(open_page):
    at = open_page(PAGE)
    # the word's three measures, τ held out, attention replaced, 3 emails' measures, the emails' τ, 2 × ("it", decision)
    assert figures_shown(at) == ["importance", "taus", "attention-replaced", *["importance"] * 3, "taus",
                                 *["pronoun", "importance"] * 2]
    text = plain(at).replace("*", "")
    ranked = r"(much as|somewhat as|unlike|with the same word first, but otherwise unlike|cannot be compared with)"
    assert re.search(rf"additive: its attention ranks the source words {ranked} what removing them costs \(τ ", text)
    assert re.search(rf"attention-lstm: its attention ranks an email's words {ranked}", text)
    assert re.search(r"Email A: In the last layer the heads of “it” look most at: .*\d of the 4 last-layer heads", text)
    assert re.search(r"Its team changes under at least one shuffle for \d+\.\d% of the emails", text)
    assert re.search(r"exact match \d+\.\d% with its own, \d+\.\d% uniform, \d+\.\d% shuffled", text)


def test_moving_through_the_output_words(open_page):
    at = open_page(PAGE, s="my red phone never arrived .")
    at.select_slider(key="explainword").set_value(1).run()
    assert not at.exception
    assert "Writing “téléphone”" in plain(at)
    at.radio(key="explainmodel").set_value("transformer-translator").run()
    assert not at.exception
    assert "Writing “téléphone”" in plain(at) and at.get("vega_lite_chart")


def test_one_word_leaves_tau_undefined_never_nan(open_page):
    at = open_page(PAGE)
    set_sentence(at, "parcel")
    text = plain(at)
    assert "undefined" in text
    assert "nan" not in text.lower().replace("nan\u00e7", "").split()


def test_a_visitors_translator_works_on_the_page():
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.sidebar.file_uploader[0].upload("tiny-dot.safetensors", tiny_checkpoint("dot-translator")).run()
    at.switch_page(PAGE).run()
    picker = at.multiselect(key="explain-translation")
    assert picker.options[0] == "tiny-dot (yours)"
    picker.set_value(["tiny-dot (yours)"]).run()
    assert not at.exception, [e.value for e in at.exception]
    text = plain(at).replace("*", "")
    assert "tiny-dot (yours) writes" in text
    assert f"tiny-dot (yours): against {MEASURE_NAMES['gradient']} τ " in text
