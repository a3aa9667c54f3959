from conftest import SENTENCES, all_text, figures_shown, set_sentence

PAGE = "app_pages/transformer.py"


def test_chapter_shapes_printed(open_page):
    at = open_page(PAGE)
    printed = [c.value for c in at.code]
    assert "torch.Size([8, 40, 128]) torch.Size([1, 8, 128])\ntorch.Size([8, 40, 64]) torch.Size([8, 40, 40])" \
        in printed


def test_attention_maps_timing_and_self_test(open_page):
    at = open_page(PAGE)
    assert figures_shown(at) == ["attention-heads", "neuron-vectors", "neuron-scores", "neuron-mix",
                                 "attention-heads", "layer-timing", "throughput"]
    text = all_text(at)
    assert "320 steps in a row" in text and "needed one step" in text
    assert "all the positions of a sequence at the same moment" in text


def test_sentences_of_every_kind(open_page):
    at = open_page(PAGE)
    for sentence in SENTENCES:
        set_sentence(at, sentence)
        assert not at.exception


def test_the_chapters_faster_claim_is_reconciled_beside_the_throughput(open_page):
    """The chapter says the transformer trained faster; on one CPU thread the shipped one trained slower per
    sentence, and the page says so, with both measured figures, next to the chart."""
    from seqviz.ui import models

    speed = {name: models.shipped_meta(name)["steps"] * models.shipped_meta(name)["train"]["batch_size"]
             / models.shipped_meta(name)["train_seconds"] for name in ("transformer-translator", "dot")}
    text = all_text(open_page(PAGE))
    verdict = "slower" if speed["transformer-translator"] < speed["dot"] else "faster"
    assert f"Here the transformer trained {verdict} than the attention LSTM" in text
    assert f"{speed['transformer-translator']:.0f} against {speed['dot']:.0f} sentence pairs per second" in text


def test_the_neuron_view_shows_the_models_own_step(open_page):
    """Layer, head and the word asking from the address; the page's numbers are the model's (its three steps
    recomputed from q and k agree with its attention to the printed precision)."""
    import numpy as np

    from seqviz import zoo
    from seqviz.analysis.neurons import neuron_trace

    sentence = "where is my parcel ? it never arrived ."
    at = open_page(PAGE, s=sentence, nlayer="layer 2", nhead="head 4", nword="04 parcel")
    assert (at.radio(key="nlayer").value, at.radio(key="nhead").value, at.select_slider(key="nword").value) == (1, 3, 3)
    classifier = zoo.load("transformer")
    step = neuron_trace(classifier.model, sentence.split(), classifier.vocabularies["tokens"]).step(1, 3, 3)
    top = int(np.argmax(step.weights))
    text = all_text(at)
    assert "In layer 2, head 4, “parcel” (word 4) asks with q of 16 numbers" in text
    assert f"the most, {step.weights[top]:.1%}, goes to “{sentence.split()[top]}”" in text
    assert "differ from the model's own by at most" in text

    at.radio(key="nlayer").set_value(0).run()  # the part reruns alone
    assert not at.exception
    assert "In layer 1, head 4, “parcel” (word 4)" in all_text(at)


def test_a_stale_query_word_from_the_address_is_dropped(open_page):
    at = open_page(PAGE, s="hello", nword="09 charger", nlayer="layer 9")
    assert not at.exception
    assert (at.radio(key="nlayer").value, at.select_slider(key="nword").value) == (0, 0)
    assert "“hello” (word 1)" in all_text(at)
