"""/what-if's attention edits, one word changed and hostile settings (seqviz.analysis.decoding,
seqviz.analysis.beam), on the models of tests/unit/test_whatif_decoding.py: an attention edit that writes back the
model's own weights changes nothing and one that moves the weight reaches that step only; a changed word gives both
translations with their differences marked; hostile settings get a ValueError with a plain sentence.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import whatif_support
from whatif_support import MODELS, SENTENCES, teacher_greedy, written

from seqviz import zoo
from seqviz.analysis import beam, decoding
from seqviz.models.common import BOS_ID
from seqviz.models.seq2seq import Seq2Seq
from seqviz.models.transformer_seq2seq import TransformerSeq2Seq

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

models = whatif_support.models  # its fixture: name -> (model, vocabularies)


# ---------------------------------------------------------------------------------------------------------
# 4. Edit the attention


def own_weights(model, vocabularies, tokens, decoded: decoding.Decoded, step: int) -> np.ndarray:
    """The weights the model itself used at ``step``: (T,) for an LSTM, (N, T) for the transformer's last layer."""
    if not isinstance(model, TransformerSeq2Seq):
        return decoded.weights[step]
    source = decoding.read_source(model, vocabularies, tokens)
    with torch.inference_mode():
        memory, src_mask, _ = model.encode(source.src, source.lengths)
        _, _, cross = model.decode(torch.tensor([[BOS_ID, *written(decoded)[:-1]]]), memory, src_mask)
    return cross[-1][0, :, step].numpy()  # (N, T)


@pytest.mark.parametrize("name", [n for n in MODELS if n != "plain"])
def test_an_attention_edit_that_writes_back_the_models_own_weights_changes_nothing(models, name):
    model, vocabularies = models[name]
    for tokens in SENTENCES[:3]:
        original = decoding.next_words(model, vocabularies, tokens)
        for step in (0, len(original.steps) // 2, len(original.steps) - 1):
            weights = own_weights(model, vocabularies, tokens, original, step)
            edited = decoding.edit_attention(model, vocabularies, tokens, step, weights=weights)
            assert edited.edited.ids == original.ids and edited.word_after == edited.word_before
            np.testing.assert_allclose(edited.edited.log_probs, original.log_probs, atol=1e-5)
            np.testing.assert_allclose(edited.weights_after, edited.weights_before, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in MODELS if n != "plain"])
def test_an_attention_edit_puts_the_weight_where_asked_at_that_step_only(models, name):
    model, vocabularies = models[name]
    tokens = SENTENCES[1]
    original = decoding.next_words(model, vocabularies, tokens)
    step = 2
    for position in range(len(tokens)):
        edited = decoding.edit_attention(model, vocabularies, tokens, step, source_position=position)
        expected = np.eye(len(tokens))[position]
        np.testing.assert_allclose(edited.weights_after, expected, atol=1e-6)
        np.testing.assert_allclose(edited.edited.log_probs[:step], original.log_probs[:step], atol=1e-6)
        assert edited.edited.ids[:step] == original.ids[:step]
        if not isinstance(model, Seq2Seq) or not model.decoder.attention.before_step:
            # the edit reaches only this step's word (dot: c_t is found after the step; the transformer's last
            # layer feeds no later position), so the rest is greedy from the words written
            ids, ended = teacher_greedy(model, vocabularies, tokens, written(edited.edited)[: step + 1])
            assert (edited.edited.ids, edited.edited.ended) == (ids, ended)
    row = np.arange(1, len(tokens) + 1, dtype=float)  # any non-negative row, renormalised
    edited = decoding.edit_attention(model, vocabularies, tokens, step, weights=row)
    np.testing.assert_allclose(edited.weights_after, row / row.sum(), atol=1e-6)


def test_the_plain_translator_has_no_attention_to_edit(models):
    if "plain" not in models:
        pytest.skip("plain is not trained")
    model, vocabularies = models["plain"]
    with pytest.raises(ValueError, match="no attention to edit"):
        decoding.edit_attention(model, vocabularies, SENTENCES[1], 0, source_position=0)


# ---------------------------------------------------------------------------------------------------------
# 7. One word changed


@pytest.mark.parametrize("name", MODELS)
def test_one_word_changed_gives_both_translations_and_marks_the_differences(models, name):
    model, vocabularies = models[name]
    tokens = "the parcel arrived .".split()
    change = decoding.change_word(model, vocabularies, tokens, 1, "box")
    assert change.before.ids == decoding.next_words(model, vocabularies, tokens).ids
    assert change.after.ids == decoding.next_words(model, vocabularies, "the box arrived .".split()).ids
    assert change.after.src_tokens == "the box arrived .".split()
    assert len(change.differs_before) == len(change.before.ids) and len(change.differs_after) == len(change.after.ids)
    kept_before = [w for w, d in zip(change.before.tokens, change.differs_before, strict=True) if not d]
    kept_after = [w for w, d in zip(change.after.tokens, change.differs_after, strict=True) if not d]
    assert kept_before == kept_after  # the words not marked are the ones both have, in order
    if name in ("additive", "dot", "transformer-translator"):  # exact on the grammar
        assert change.before.tokens == "le colis est arrivé .".split()
        assert change.after.tokens == "la boîte est arrivée .".split()
        assert change.differs_before == change.differs_after == [True, True, False, True, False]
    same = decoding.change_word(model, vocabularies, tokens, 1, "parcel")
    assert not any(same.differs_before) and not any(same.differs_after)


# ---------------------------------------------------------------------------------------------------------
# Hostile input


HOSTILE = {
    "empty sentence": (lambda m, v: decoding.next_words(m, v, []), "no words"),
    "too long": (lambda m, v: decoding.next_words(m, v, ["the"] * 61), "at most 60"),
    "not words": (lambda m, v: decoding.next_words(m, v, ["the", 3]), "list of words"),
    "k 0": (lambda m, v: decoding.next_words(m, v, ["the"], k=0), "number of next words"),
    "k 11": (lambda m, v: decoding.next_words(m, v, ["the"], k=11), "number of next words"),
    "k True": (lambda m, v: decoding.next_words(m, v, ["the"], k=True), "number of next words"),
    "temperature -1": (lambda m, v: decoding.next_words(m, v, ["the"], temperature=-1.0), "temperature"),
    "temperature 9": (lambda m, v: decoding.next_words(m, v, ["the"], temperature=9.0), "temperature"),
    "temperature nan": (lambda m, v: decoding.next_words(m, v, ["the"], temperature=float("nan")), "temperature"),
    "seed -1": (lambda m, v: decoding.next_words(m, v, ["the"], temperature=1.0, seed=-1), "seed"),
    "max_len 0": (lambda m, v: decoding.next_words(m, v, ["the"], max_len=0), "length limit"),
    "width 0": (lambda m, v: beam.beam_search(m, v, ["the"], width=0), "beam width"),
    "width 9": (lambda m, v: beam.beam_search(m, v, ["the"], width=9), "beam width"),
    "width 2.5": (lambda m, v: beam.beam_search(m, v, ["the"], width=2.5), "beam width"),
    "length_norm": (lambda m, v: beam.beam_search(m, v, ["the"], length_norm="yes"), "Length normalisation"),
    "step -1": (lambda m, v: decoding.force_word(m, v, ["the"], -1, "le"), "output step"),
    "step 99": (lambda m, v: decoding.force_word(m, v, ["the"], 99, "le"), "output step"),
    "unknown forced word": (lambda m, v: decoding.force_word(m, v, ["the"], 0, "zèbre"), "not a word"),
    "forced <pad>": (lambda m, v: decoding.force_word(m, v, ["the"], 0, "<pad>"), "not a word"),
    "forced <unk>": (lambda m, v: decoding.force_word(m, v, ["the"], 0, "<unk>"), "not a word"),
    "edit both": (lambda m, v: decoding.edit_attention(m, v, ["the"], 0, 0, [1.0]), "either"),
    "edit neither": (lambda m, v: decoding.edit_attention(m, v, ["the"], 0), "either"),
    "edit position": (lambda m, v: decoding.edit_attention(m, v, ["the"], 0, source_position=1), "position"),
    "edit step": (lambda m, v: decoding.edit_attention(m, v, ["the"], 99, source_position=0), "output step"),
    "edit shape": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=[1.0]), "must be"),
    "edit negative": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=[2.0, -1.0]), "non-neg"),
    "edit zeros": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=[0.0, 0.0]), "not all 0"),
    "edit nan": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=[np.nan, 1.0]), "non-neg"),
    "edit text": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=["a", "b"]), "numbers"),
    "change position": (lambda m, v: decoding.change_word(m, v, ["the", "box"], 2, "the"), "position"),
    "change unknown": (lambda m, v: decoding.change_word(m, v, ["the", "box"], 1, "zebra"), "not a word"),
    "change <eos>": (lambda m, v: decoding.change_word(m, v, ["the", "box"], 1, "<eos>"), "not a word"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("name", ["additive", "tiny-transformer"])
def test_hostile_settings_get_a_plain_message(models, name, case):
    if name not in models:
        pytest.skip(f"{name} is not trained")
    model, vocabularies = models[name]
    call, message = HOSTILE[case]
    with pytest.raises(ValueError, match=message) as raised:
        call(model, vocabularies)
    assert len(str(raised.value)) < 200 and "Traceback" not in str(raised.value)


def test_a_classifier_is_not_a_translator():
    if "lstm" not in zoo.available():
        pytest.skip("lstm is not trained")
    checkpoint = zoo.load("lstm")
    with pytest.raises(ValueError, match="does not translate"):
        decoding.next_words(checkpoint.model, checkpoint.vocabularies, ["hello"])


def test_unknown_source_words_are_read_as_unk_as_on_every_page(models):
    model, vocabularies = models["tiny-additive"]
    decoded = decoding.next_words(model, vocabularies, SENTENCES[3])
    assert decoded.src_tokens == ["where", "is", "my", "<unk>", "?"]
    assert decoding.read_source(model, vocabularies, SENTENCES[3]).unknown == ["zebra"]


def test_the_pickers_offer_exactly_the_words_the_functions_take(models):
    model, vocabularies = models["tiny-additive"]
    forceable, replacements = decoding.forceable_words(vocabularies), decoding.replacement_words(vocabularies)
    assert "<eos>" in forceable and not {"<pad>", "<unk>", "<bos>"} & set(forceable)
    assert set(forceable) == set(vocabularies["tgt"].itos) - {"<pad>", "<unk>", "<bos>"}
    assert set(replacements) == set(vocabularies["src"].itos) - {"<pad>", "<unk>", "<bos>", "<eos>"}
    assert decoding.force_word(model, vocabularies, SENTENCES[1], 0, forceable[-1]).word == forceable[-1]
    assert decoding.change_word(model, vocabularies, SENTENCES[1], 0, replacements[-1]).word == replacements[-1]
