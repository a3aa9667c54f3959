"""The attention-pooling LSTM classifier: shapes, masking, the step-by-step replay's parity, and the pooling
override (uniform and permuted weights) that asks whether its decision depends on where it attends."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from seqviz import families
from seqviz.models import build
from seqviz.models.classifiers import (
    AttentionClassifierConfig,
    permuted_pooling,
    replay_attention_pooling,
    uniform_pooling,
)
from seqviz.tasks import pad_batch
from seqviz.text import Vocab
from seqviz.traces import ClassifierTrace, PooledAttentionTrace

SENTENCES = [
    "the parcel arrived , but never the charger that was supposed to be in it .".split(),
    "the charger arrived , but never the parcel that was supposed to have it .".split(),
    "my invoice is wrong".split(),
]
LABELS = ("lost_parcel", "missing_item", "damaged_item", "billing")


@pytest.fixture(scope="module")
def vocab() -> Vocab:
    return Vocab.build(SENTENCES)


def tiny(vocab: Vocab, **fields):
    torch.manual_seed(0)
    config = {"vocab_size": len(vocab), "labels": LABELS, "emb_dim": 8, "hidden_dim": 6, "attn_dim": 5, **fields}
    return build("attention-lstm", config).eval()


def batch_of(vocab: Vocab, sentences):
    return pad_batch([vocab.encode(s) for s in sentences])  # ids (B, T), lengths (B,)


@pytest.fixture(scope="module", params=[True, False], ids=["bidirectional", "one-way"])
def model(request, vocab):
    return tiny(vocab, bidirectional=request.param)


def test_shapes_and_the_classifier_surface(model, vocab):
    ids, lengths = batch_of(vocab, SENTENCES)
    D = 12 if model.config.bidirectional else 6
    with torch.no_grad():
        logits, scores, weights = model.read(model.embed(ids), lengths)
        states = model.states(model.embed(ids), lengths)
    assert logits.shape == (3, 4) and scores.shape == weights.shape == (3, ids.shape[1])
    assert states.shape == (3, ids.shape[1], D)
    assert model.predict_proba(ids, lengths).shape == (3, 4)
    loss = model.loss({"ids": ids, "lengths": lengths, "labels": torch.tensor([1, 0, 3])})
    assert loss.shape == () and torch.isfinite(loss)
    trace = model.trace(SENTENCES[2], vocab)
    assert isinstance(trace, ClassifierTrace) and trace.hidden.shape == (4, D)


def test_padding_gets_exactly_zero_weight_and_changes_nothing(model, vocab):
    ids, lengths = batch_of(vocab, [SENTENCES[2], SENTENCES[0]])
    weights = model.attention_weights(ids, lengths)  # (2, T)
    assert weights.shape == ids.shape
    assert np.all(weights[0, 4:] == 0.0) and np.all(weights[0, :4] > 0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)
    alone_ids, alone_lengths = batch_of(vocab, [SENTENCES[2]])
    np.testing.assert_allclose(model.attention_weights(alone_ids, alone_lengths)[0], weights[0, :4], atol=1e-6)
    np.testing.assert_allclose(model.predict_proba(alone_ids, alone_lengths)[0],
                               model.predict_proba(ids, lengths)[0], atol=1e-6)


def test_the_replay_reproduces_the_forward_pass(model, vocab):
    """Parity, as the LSTM gates': every step recomputed from the module's own weights, each sentence of a padded
    batch alone, gives the batch's states, scores, weights and logits to 1e-5."""
    ids, lengths = batch_of(vocab, SENTENCES)
    with torch.no_grad():
        emb = model.embed(ids)
        logits, scores, weights = model.read(emb, lengths)
        states = model.states(emb, lengths)
    for row, length in enumerate(lengths.tolist()):
        replay = replay_attention_pooling(model, emb[row, :length])
        np.testing.assert_allclose(replay["states"], states[row, :length], atol=1e-5)
        np.testing.assert_allclose(replay["scores"], scores[row, :length], atol=1e-5)
        np.testing.assert_allclose(replay["weights"], weights[row, :length], atol=1e-5)
        np.testing.assert_allclose(replay["logits"], logits[row], atol=1e-5)


def test_the_backward_direction_reads_each_email_from_its_last_word(vocab):
    model = tiny(vocab)
    ids, lengths = batch_of(vocab, [SENTENCES[2]])
    with torch.no_grad():
        emb = model.embed(ids)
        states = model.states(emb, lengths)[0]  # (T, 12)
        backward, _ = model.backward_lstm(emb.flip(1))  # the sentence reversed, no padding
    np.testing.assert_allclose(states[:, 6:], backward[0].flip(0), atol=1e-6)


def test_the_real_weights_through_the_override_give_the_plain_logits(model, vocab):
    ids, lengths = batch_of(vocab, SENTENCES)
    with torch.no_grad():
        plain = model(ids, lengths)
        weights = model.read(model.embed(ids), lengths)[2]
        assert torch.equal(model(ids, lengths, weights=weights), plain)
        assert torch.equal(model(ids, lengths, weights=lambda alpha, mask: alpha), plain)


@pytest.mark.parametrize("override", [uniform_pooling, permuted_pooling(3)], ids=["uniform", "permuted"])
def test_uniform_and_permuted_weights_sum_to_one_over_the_real_words(model, vocab, override):
    ids, lengths = batch_of(vocab, SENTENCES)
    own = model.attention_weights(ids, lengths)
    with torch.no_grad():
        _, _, used = model.read(model.embed(ids), lengths, override)
    used = used.numpy()
    np.testing.assert_allclose(used.sum(axis=1), 1.0, atol=1e-6)
    for row, length in enumerate(lengths.tolist()):
        assert np.all(used[row, length:] == 0.0)
        np.testing.assert_allclose(np.sort(used[row, :length]),
                                   np.sort(own[row, :length]) if override is not uniform_pooling
                                   else np.full(length, 1 / length), atol=1e-7)
    assert not np.allclose(used, own)
    again = model.predict_proba(ids, lengths, weights=override)  # seeded: the same permutation every call
    np.testing.assert_array_equal(again, model.predict_proba(ids, lengths, weights=override))


def test_the_override_is_per_call_and_never_kept(model, vocab):
    ids, lengths = batch_of(vocab, SENTENCES)
    before = model.predict_proba(ids, lengths)
    model.predict_proba(ids, lengths, weights=uniform_pooling)
    np.testing.assert_array_equal(model.predict_proba(ids, lengths), before)
    with pytest.raises(ValueError, match="one per word"):
        model(ids, lengths, weights=torch.ones(3, 2))


def test_the_pooling_trace(vocab):
    model = tiny(vocab)
    trace = model.pooling_trace(["the", "zebra", "arrived"], vocab)
    assert isinstance(trace, PooledAttentionTrace) and trace.tokens == ["the", "<unk>", "arrived"]
    assert trace.scores.shape == trace.weights.shape == (3,) and trace.probs.shape == (4,)
    assert not trace.replaced and trace.predicted in LABELS
    np.testing.assert_allclose(trace.probs, model.trace(["the", "zebra", "arrived"], vocab).probs, atol=1e-7)
    uniform = model.pooling_trace(["the", "zebra", "arrived"], vocab, weights=[1 / 3] * 3)
    assert uniform.replaced and np.allclose(uniform.weights, 1 / 3)
    np.testing.assert_array_equal(uniform.scores, trace.scores)  # the model's scores, whatever it pooled with
    np.testing.assert_allclose(uniform.probs, model.pooling_trace(["the", "zebra", "arrived"], vocab,
                                                                  weights=uniform_pooling).probs, atol=1e-7)


def test_saliency_reaches_every_word(vocab):
    from seqviz.analysis.gradients import saliency

    model = tiny(vocab).requires_grad_(False).double()  # float64: the finite differences below are then exact enough
    sentence = SENTENCES[0]
    result = saliency(model, sentence, vocab)
    assert list(result.tokens) == sentence and result.norms.shape == (len(sentence),)
    # every word gets a gradient: finite and non-zero at every position, the last word's and the first's alike
    assert np.all(np.isfinite(result.norms)) and np.all(result.norms > 1e-8), result.norms
    # and each is the norm of the score's gradient at that word, here by central differences on every coordinate
    # of every word's embedding (independent of autograd)
    ids = torch.tensor([vocab.encode(sentence)])
    lengths = torch.tensor([len(sentence)])
    emb = model.embed(ids).detach()
    predicted = model.labels.index(result.predicted)
    h = 1e-6
    gradient = torch.zeros_like(emb[0])
    with torch.no_grad():
        for t in range(emb.shape[1]):
            for e in range(emb.shape[2]):
                step = torch.zeros_like(emb)
                step[0, t, e] = h
                up = model.forward_from_embeddings(emb + step, lengths)[0, predicted]
                down = model.forward_from_embeddings(emb - step, lengths)[0, predicted]
                gradient[t, e] = (up - down) / (2 * h)
    np.testing.assert_allclose(result.norms, gradient.norm(dim=-1).numpy(), rtol=1e-5)


def test_the_family_builds_from_a_run_and_bounds_its_sizes():
    family = families.get("attention-lstm")
    assert family.attends and not (family.recurrent or family.lstm_gates or family.heads)
    assert family.sizes == ("embedding", "hidden") and family.trains_on == ("classification",)
    spec = SimpleNamespace(embedding=16, hidden=8)  # a RunSpec's sizes (a RunSpec would build the emails task)
    config = family.config({**family.spec_fields(spec), "vocab_size": 40, "labels": LABELS})
    assert (config.emb_dim, config.hidden_dim, config.attn_dim, config.bidirectional) == (16, 8, 8, True)
    for fields in ({"attn_dim": 0}, {"hidden_dim": 10**6}, {"bidirectional": "yes"}, {"dropout": 1.0}):
        with pytest.raises(ValueError):
            AttentionClassifierConfig(**fields)
