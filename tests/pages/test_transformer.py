from conftest import SENTENCES, all_text, figures_shown, set_sentence

PAGE = "app_pages/transformer.py"


def test_chapter_shapes_printed(open_page):
    at = open_page(PAGE)
    printed = [c.value for c in at.code]
    assert "torch.Size([8, 40, 128]) torch.Size([1, 8, 128])\ntorch.Size([8, 40, 64]) torch.Size([8, 40, 40])" \
        in printed


def test_attention_maps_timing_and_self_test(open_page):
    at = open_page(PAGE)
    assert figures_shown(at) == ["attention-heads", "attention-heads", "layer-timing", "throughput"]
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
