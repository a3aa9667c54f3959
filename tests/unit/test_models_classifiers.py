"""The classifiers: shapes of forward passes and traces, the LSTM gate replay's parity, bag-of-words blindness."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from seqviz.models import FAMILIES, build, family_of, num_parameters
from seqviz.models.bow import NaiveBayesClassifier, NaiveBayesConfig
from seqviz.models.classifiers import lstm_gate_trace
from seqviz.tasks import pad_batch
from seqviz.text import Vocab
from seqviz.traces import ClassifierTrace, LSTMGateTrace, SelfAttentionTrace

SENTENCES = [
    "the parcel arrived , but never the charger that was supposed to be in it .".split(),
    "the charger arrived , but never the parcel that was supposed to have it .".split(),
    "my invoice is wrong".split(),
]
LABELS = ("lost_parcel", "missing_item", "damaged_item", "billing")
TORCH_FAMILIES = ("rnn", "gru", "lstm", "attention-lstm", "transformer")


@pytest.fixture(scope="module")
def vocab() -> Vocab:
    return Vocab.build(SENTENCES)


def tiny(family: str, vocab: Vocab):
    torch.manual_seed(0)
    sizes = {"bow": {}, "transformer": {"d_model": 16, "n_heads": 2, "d_ff": 32}}
    config = sizes.get(family, {"emb_dim": 8, "hidden_dim": 12})
    model = build(family, {"vocab_size": len(vocab), "labels": LABELS, **config})
    return model.eval()


def batch_of(vocab: Vocab, sentences):
    return pad_batch([vocab.encode(s) for s in sentences])  # ids (B, T), lengths (B,)


@pytest.mark.parametrize("family", TORCH_FAMILIES)
def test_forward_loss_and_probabilities(family, vocab):
    model = tiny(family, vocab)
    ids, lengths = batch_of(vocab, SENTENCES)
    logits = model(ids, lengths)
    assert logits.shape == (3, 4)
    loss = model.loss({"ids": ids, "lengths": lengths, "labels": torch.tensor([1, 0, 3])})
    assert loss.shape == () and torch.isfinite(loss)
    probs = model.predict_proba(ids, lengths)
    assert isinstance(probs, np.ndarray) and probs.shape == (3, 4)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    assert family_of(model) == family and num_parameters(model) > 0


@pytest.mark.parametrize("family", TORCH_FAMILIES)
def test_padding_never_changes_a_sentence_score(family, vocab):
    """A short sentence scores the same alone and beside a longer one (padding is invisible)."""
    model = tiny(family, vocab)
    alone = model.predict_proba(*batch_of(vocab, [SENTENCES[2]]))
    padded = model.predict_proba(*batch_of(vocab, [SENTENCES[2], SENTENCES[0]]))
    np.testing.assert_allclose(alone[0], padded[0], atol=1e-6)


@pytest.mark.parametrize("family", (*TORCH_FAMILIES, "bow"))
def test_trace_keeps_unknown_words_visible(family, vocab):
    model = tiny(family, vocab)
    trace = model.trace(["the", "zebra", "arrived"], vocab)
    assert isinstance(trace, ClassifierTrace)
    assert trace.tokens == ["the", "<unk>", "arrived"]
    assert trace.labels == LABELS and trace.probs.shape == (4,)
    assert trace.predicted in LABELS
    if family in ("rnn", "gru", "lstm"):
        assert trace.hidden.shape == (3, 12)
    elif family == "attention-lstm":
        assert trace.hidden.shape == (3, 24)  # h_j = [→h_j; ←h_j]
    else:
        assert trace.hidden is None
    with pytest.raises(ValueError, match="no words"):
        model.trace([], vocab)


@pytest.mark.parametrize("family", ("rnn", "gru", "lstm"))
def test_recurrent_trace_hidden_matches_the_final_state_the_head_reads(family, vocab):
    model = tiny(family, vocab)
    trace = model.trace(SENTENCES[0], vocab)
    with torch.no_grad():
        final = torch.from_numpy(trace.hidden[-1])
        probs = torch.softmax(model.head(final), dim=-1).numpy()
    np.testing.assert_allclose(probs, trace.probs, atol=1e-6)
    rows = {"rnn": 12, "gru": 36, "lstm": 48}[family]
    assert model.recurrent_layer.weight_hh_l0.shape == (rows, 12)  # W_h


@pytest.mark.parametrize("family", TORCH_FAMILIES)
def test_gradient_of_the_score_reaches_every_word_vector(family, vocab):
    model = tiny(family, vocab)
    model.requires_grad_(False)  # as loaded models are: the gradient is taken with respect to the input
    ids, lengths = batch_of(vocab, [SENTENCES[0]])
    emb = model.embed(ids).detach().requires_grad_(True)  # (1, T, E)
    score = model.forward_from_embeddings(emb, lengths)[0].max()
    (grad,) = torch.autograd.grad(score, emb)
    norms = grad[0].norm(dim=-1)  # (T,)
    assert norms.shape == (len(SENTENCES[0]),)
    assert bool((norms > 0).all())


def test_lstm_gate_replay_reproduces_nn_lstm(vocab):
    """The parity test: replaying nn.LSTM's own weights gives its hidden and cell states to 1e-5."""
    model = tiny("lstm", vocab)
    sentence = SENTENCES[1]
    trace = model.gate_trace(sentence, vocab)
    assert isinstance(trace, LSTMGateTrace) and trace.tokens == sentence
    with torch.no_grad():
        out, (_, c_n) = model.rnn(model.embed(torch.tensor([vocab.encode(sentence)])))
    np.testing.assert_allclose(trace.hidden, out[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(trace.cell[-1], c_n[0, 0].numpy(), atol=1e-5)
    for name in ("input_gate", "forget_gate", "output_gate", "candidate", "cell", "hidden"):
        assert getattr(trace, name).shape == (len(sentence), 12)
    for gate in (trace.input_gate, trace.forget_gate, trace.output_gate):
        assert gate.min() >= 0 and gate.max() <= 1
    assert np.abs(trace.candidate).max() <= 1
    # h_t = o_t ⊙ tanh(c_t) holds row by row
    np.testing.assert_allclose(trace.hidden, trace.output_gate * np.tanh(trace.cell), atol=1e-6)


def test_lstm_gate_replay_of_a_bidirectional_encoder():
    torch.manual_seed(1)
    lstm = nn.LSTM(5, 7, batch_first=True, bidirectional=True)
    inputs = torch.randn(9, 5)
    with torch.no_grad():
        out, _ = lstm(inputs[None])  # (1, T, 2H)
    forward = lstm_gate_trace(lstm, inputs, [str(i) for i in range(9)])
    backward = lstm_gate_trace(lstm, inputs, [str(i) for i in range(9)], reverse=True)
    np.testing.assert_allclose(forward.hidden, out[0, :, :7].numpy(), atol=1e-5)
    np.testing.assert_allclose(backward.hidden, out[0, :, 7:].numpy(), atol=1e-5)


def test_transformer_attention_trace_every_layer_and_head(vocab):
    model = tiny("transformer", vocab)
    trace = model.attention_trace(SENTENCES[0], vocab)
    assert isinstance(trace, SelfAttentionTrace)
    T = len(SENTENCES[0])
    assert trace.weights.shape == (2, 2, T, T)
    np.testing.assert_allclose(trace.weights.sum(axis=-1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="at most"):
        model.embed(torch.zeros(1, 65, dtype=torch.long))


def test_transformer_masks_padding_in_attention(vocab):
    model = tiny("transformer", vocab)
    ids, lengths = batch_of(vocab, [SENTENCES[2], SENTENCES[0]])
    with torch.no_grad():
        _, weights = model.encode(model.embed(ids), lengths)  # (B, L, N, T, T)
    short = int(lengths[0])
    assert float(weights[0, :, :, :, short:].abs().max()) == 0.0


def test_models_are_nn_modules_except_bow():
    for entry in FAMILIES.values():
        assert issubclass(entry.model_class, nn.Module) == (not entry.counts)


def test_the_family_registry():
    """Each family: config class, model class, the kind of task it serves and a label for people."""
    from seqviz.models import families, family

    assert set(families("classification")) | set(families("translation")) == set(FAMILIES)
    assert {"rnn", "gru", "lstm", "attention-lstm", "transformer", "bow"} <= set(families("classification"))
    assert {"plain", "additive", "dot", "transformer-seq2seq"} <= set(families("translation"))
    assert family("additive").label == "LSTM encoder-decoder, additive attention (Bahdanau)"
    assert len({f.label for f in FAMILIES.values()}) == len(FAMILIES)
    assert family("gru").model_class.__name__ == "GRUClassifier"
    assert family("gru").config_class.__name__ == "RecurrentClassifierConfig"
    with pytest.raises(KeyError, match="unknown model family"):
        family("lstm2000")
    with pytest.raises(ValueError, match="builds a 'dot' model"):
        build("plain", {"kind": "dot"})
    with pytest.raises(KeyError):
        family_of(object())


@pytest.mark.parametrize(
    ("family", "fields"),
    [("rnn", {"hidden_dim": 10**6}), ("lstm", {"vocab_size": 10**7}), ("gru", {"labels": ("only",)}),
     ("transformer", {"n_layers": 1000}), ("transformer", {"n_heads": 64, "d_model": 64}),
     ("transformer", {"max_len": 10**6}), ("bow", {"vocab_size": 2}), ("attention-lstm", {"attn_dim": 0})],
)
def test_configs_bound_every_size(family, fields):
    with pytest.raises(ValueError):
        FAMILIES[family].config_class(**fields)


@pytest.mark.parametrize("family", ("rnn", "gru", "lstm"))
def test_recurrent_models_show_their_layer_through_properties(family, vocab):
    model = tiny(family, vocab)
    assert isinstance(model.recurrent_layer, nn.RNNBase) and model.recurrent_layer.hidden_size == 12
    assert model.vocab_size == len(vocab)


def test_bow_cannot_tell_word_identical_twins_apart(vocab):
    """Twins share their bag of words, so naive Bayes gives them the same probabilities: <= 50 % on twins."""
    model = NaiveBayesClassifier(NaiveBayesConfig(vocab_size=len(vocab), labels=LABELS))
    model.fit([vocab.encode(s) for s in SENTENCES], [1, 0, 3])
    swap = {"parcel": "charger", "charger": "parcel"}
    twin = [swap.get(word, word) for word in SENTENCES[0]]  # the same words, the other meaning
    assert sorted(twin) == sorted(SENTENCES[0]) and twin != SENTENCES[0]
    np.testing.assert_array_equal(model.trace(twin, vocab).probs, model.trace(SENTENCES[0], vocab).probs)
    assert model.trace(SENTENCES[2], vocab).predicted == "billing"
    ids, lengths = batch_of(vocab, SENTENCES)
    probs = model.predict_proba(ids, lengths)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    assert model.word_counts.sum() == sum(len(s) for s in SENTENCES)
    assert model.num_parameters() == 4 * len(vocab) + 4
