"""The neuron view (seqviz.analysis.neurons): the q and k it shows are the model's own. From them alone, with the
model's mask, softmax(q·k/√d_k) gives back every weight of the model's attention trace, for every layer, head and
query word; the products, scores and figures are what they say they are."""

import math

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from seqviz import charts, views, zoo
from seqviz.analysis.neurons import neuron_trace
from seqviz.models import build
from seqviz.text import Vocab

SENTENCES = ["the parcel arrived , but never the charger that was supposed to be in it .",
             "where is my parcel ? it never arrived .", "hello", "zzz qqq refund refund refund"]


@pytest.fixture(scope="module")
def classifier():
    return zoo.load("transformer")


def recomputed(queries: np.ndarray, keys: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """softmax(Q Kᵀ / √d_k) over the words the mask allows, 0 elsewhere, from the shown q and k alone: (L, N, T, T)."""
    scores = queries.astype(np.float64) @ np.swapaxes(keys.astype(np.float64), -1, -2) / math.sqrt(queries.shape[-1])
    scores = np.where(mask[:, None], scores, -np.inf)  # mask (L, T, T) -> every head
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_the_shown_q_and_k_give_back_the_models_attention(classifier, sentence):
    tokens = sentence.split()
    vocab = classifier.vocabularies["tokens"]
    trace = neuron_trace(classifier.model, tokens, vocab)
    own = classifier.model.attention_trace(tokens, vocab)  # the page's heatmaps of every layer and head
    assert trace.tokens == own.tokens
    layers, heads, words, d_k = trace.shape
    assert (layers, heads, words) == own.weights.shape[:3] and d_k == 64 // 4
    np.testing.assert_allclose(recomputed(trace.queries, trace.keys, trace.mask), own.weights, atol=1e-5, rtol=0)
    for layer in range(layers):  # each step the page draws: its softmax column is the model's weight row
        for head in range(heads):
            for query in range(words):
                np.testing.assert_allclose(trace.step(layer, head, query).weights, own.weights[layer, head, query],
                                           atol=1e-5, rtol=0)


def test_the_check_would_catch_vectors_that_are_not_the_models(classifier):
    """The recomputation above can fail: the keys of the other layer, or the heads in another order, give other
    weights."""
    tokens = SENTENCES[0].split()
    trace = neuron_trace(classifier.model, tokens, classifier.vocabularies["tokens"])
    own = classifier.model.attention_trace(tokens, classifier.vocabularies["tokens"]).weights
    other_layer = recomputed(trace.queries, trace.keys[::-1], trace.mask)
    other_heads = recomputed(trace.queries, np.roll(trace.keys, 1, axis=1), trace.mask)
    assert np.abs(other_layer - own).max() > 0.05 and np.abs(other_heads - own).max() > 0.05


def test_the_models_mask_hides_padding_and_the_recomputation_follows_it():
    """A model of other sizes (3 layers of 3 heads, d_k = 8): the mask its forward pass used is the one shown (one
    sentence: every word real) and the weights recomputed under it are the model's; a mask that hides words, as the
    model's hides padding, gives those words exactly 0."""
    torch.manual_seed(3)
    vocab = Vocab.build([["a", "b", "c", "d"]])
    model = build("transformer", {"vocab_size": len(vocab), "labels": ("x", "y"), "d_model": 24, "n_heads": 3,
                                  "n_layers": 3, "d_ff": 16, "max_len": 16, "dropout": 0.0}).eval()
    tokens = "a b c d a".split()
    trace = neuron_trace(model, tokens, vocab)
    assert trace.shape == (3, 3, 5, 8) and trace.mask.all()  # one sentence: every word real
    np.testing.assert_allclose(recomputed(trace.queries, trace.keys, trace.mask),
                               model.attention_trace(tokens, vocab).weights, atol=1e-5, rtol=0)
    hidden = trace.mask.copy()
    hidden[:, :, 3:] = False  # as the model's mask hides padding: those keys get exactly 0
    weights = recomputed(trace.queries, trace.keys, hidden)
    assert (weights[..., 3:] == 0).all() and np.allclose(weights.sum(axis=-1), 1)


def test_a_step_adds_up(classifier):
    tokens = SENTENCES[1].split()
    step = neuron_trace(classifier.model, tokens, classifier.vocabularies["tokens"]).step(1, 2, 3)
    assert (step.layer, step.head, step.query, step.d_k) == (1, 2, 3, 16)
    np.testing.assert_allclose(step.products, step.q[None, :] * step.keys)
    np.testing.assert_allclose(step.products.sum(axis=1), step.keys @ step.q)  # each row adds up to q · k_j
    np.testing.assert_allclose(step.scaled, step.dots / 4.0)  # ÷ √16
    assert math.isclose(step.weights.sum(), 1.0) and int(np.argmax(step.weights)) == int(np.argmax(step.scaled))
    np.testing.assert_allclose(step.weights, step.model_weights, atol=1e-5, rtol=0)
    stale = neuron_trace(classifier.model, tokens, classifier.vocabularies["tokens"]).step(9, -1, 99)  # clamped
    assert (stale.layer, stale.head, stale.query) == (1, 0, len(tokens) - 1)


def test_the_views_figures_and_summary(classifier):
    view = views.get("neurons")
    assert views.fits("neurons", "transformer", "emails") and not views.fits("neurons", "transformer-seq2seq",
                                                                              "translation")
    tokens = SENTENCES[0].split()
    trace = view.trace(classifier.model, classifier.vocabularies, tokens)
    step = trace.step(1, 2, 7)
    vectors, = view.figures({"t": trace}, None, "neuron-vectors", layer=1, head=2, query=7)
    scores, = view.figures({"t": trace}, None, "neuron-scores", layer=1, head=2, query=7)
    assert (vectors.name, scores.name) == ("neuron-vectors", "neuron-scores")
    assert len(vectors.table) == step.d_k * (1 + 2 * len(tokens))  # q, every k_j and every q ⊙ k_j
    products = vectors.table[vectors.table.panel == "products q ⊙ k_j"]
    np.testing.assert_allclose(products.groupby("word", observed=True)["value"].sum().to_numpy(), step.dots)
    np.testing.assert_allclose(scores.table["softmax α_j"], step.weights)
    np.testing.assert_allclose(scores.table["q·k_j/√d_k"], step.scaled)
    for figure in (vectors, scores):
        spec = figure.make(*figure.args, **figure.kwargs).to_dict(validate=False)
        validate_jsonschema(spec, load_schema())
    said = view.summary(trace, layer=1, head=2, query=7)
    top = int(np.argmax(step.weights))
    assert f"layer 2, head 3, “{tokens[7]}” (word 8)" in said
    assert f"{step.weights[top]:.1%}, goes to “{tokens[top]}” (word {top + 1})" in said
    assert charts.make("neuron-scores", step).table.shape == (len(tokens), 6)


def test_the_mix_is_the_heads_output(classifier):
    """Step (3): Σ_j α_j v_j of every head, side by side and through W_O, is what the first block's attention returns
    for the word (its input: the word and position vectors, as the model adds them)."""
    tokens = SENTENCES[1].split()
    vocab = classifier.vocabularies["tokens"]
    trace = neuron_trace(classifier.model, tokens, vocab)
    model, block = classifier.model, classifier.model.blocks[0]
    with torch.inference_mode():
        ids = torch.tensor([vocab.encode(tokens)])  # (1, T)
        x = model.embed(ids) + model.positions(torch.arange(len(tokens)))[None]  # (1, T, D)
        expected = block.attn(block.norm1(x))[0][0]  # (T, D)
        for query in range(len(tokens)):
            heads = np.concatenate([trace.step(0, head, query).mixed for head in range(trace.shape[1])])  # (D,)
            mixed = block.attn.o(torch.tensor(heads, dtype=torch.float32))  # (D,)
            np.testing.assert_allclose(mixed.numpy(), expected[query].numpy(), atol=1e-5, rtol=0)


def test_the_mix_figure(classifier):
    tokens = SENTENCES[0].split()
    trace = neuron_trace(classifier.model, tokens, classifier.vocabularies["tokens"])
    step = trace.step(0, 1, 2)
    figure, = views.get("neurons").figures({"t": trace}, None, "neuron-mix", layer=0, head=1, query=2)
    assert figure.name == "neuron-mix" and len(figure.table) == step.d_k * (len(tokens) + 1)
    output = figure.table[figure.table.panel == "output Σ α_j v_j"]
    np.testing.assert_allclose(output["value"], step.weights @ step.values)
    assert f"08 charger · α {step.weights[7]:.2f}" in set(figure.table["word"])
    validate_jsonschema(figure.make(*figure.args, **figure.kwargs).to_dict(validate=False), load_schema())
