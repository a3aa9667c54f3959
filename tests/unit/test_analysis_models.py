"""Analyses that run on torch models: gradients through time and the chapter's timing code."""

import numpy as np
import pytest
import torch

from seqviz.analysis import gradients, timing
from seqviz.analysis.bag_of_words import compare_bags
from seqviz.models.classifiers import (
    GRUClassifier,
    LSTMClassifier,
    RecurrentClassifierConfig,
    RNNClassifier,
)
from seqviz.text import Vocab, tokenize


def _model(cls, seed=0, hidden=16):
    torch.manual_seed(seed)
    config = RecurrentClassifierConfig(vocab_size=30, labels=("a", "b"), emb_dim=8, hidden_dim=hidden)
    return cls(config).eval()


def test_bags_of_twins_are_identical():
    a = tokenize("the parcel arrived , but never the charger")
    b = tokenize("the charger arrived , but never the parcel")
    bags = compare_bags(a, b)
    assert bags.cosine == pytest.approx(1.0)
    assert bags.only_in_a == [] and bags.only_in_b == []
    other = compare_bags(a, tokenize("where is my invoice ?"))
    assert other.cosine == 0.0 and "invoice" in other.only_in_b


def test_chapter_code_shapes():
    shapes = timing.chapter_shapes()
    assert shapes.out == (8, 40, 128) and shapes.h == (1, 8, 128)
    assert shapes.mixed == (8, 40, 64) and shapes.weights == (8, 40, 40)


class _Clock:
    """A stand-in for time.perf_counter: each timed call (a start, then an end) lasts the next of ``durations``
    seconds; between calls, 10 s pass (so a mix-up of start and end shows)."""

    def __init__(self, durations):
        self.durations, self.now, self.calls = list(durations), 0.0, 0

    def perf_counter(self):
        self.calls += 1
        if self.calls % 2 == 0:  # an end
            self.now += self.durations[(self.calls // 2 - 1) % len(self.durations)]
        else:  # a start
            self.now += 10.0
        return self.now


def test_median_ms_is_the_median_of_the_repeats_in_milliseconds(monkeypatch):
    clock = _Clock([0.001, 0.009, 0.003])
    monkeypatch.setattr(timing, "time", clock)
    calls = []
    assert timing._median_ms(lambda: calls.append(1), repeats=3) == pytest.approx(3.0)  # not the mean (4.33)
    assert len(calls) == 4  # a warm-up call, untimed, then the 3 repeats


def test_forward_times_cover_both_layers_with_their_measured_medians(monkeypatch):
    monkeypatch.setattr(timing, "time", _Clock([0.002]))  # every timed call takes 2 ms
    rows = timing.forward_times(lengths=(4, 8), repeats=1)
    assert [(r.length, r.layer) for r in rows] == [(n, layer) for n in (4, 8)
                                                   for layer in (timing.LSTM_LABEL, timing.ATTENTION_LABEL)]
    assert [r.milliseconds for r in rows] == pytest.approx([2.0] * 4)


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_plain_rnn_jacobian_respects_pascanu_bound(scale):
    curve = gradients.jacobian_curve(_model(RNNClassifier), length=30, samples=2, scale=scale)
    assert curve.eta is not None
    bound = curve.eta ** curve.distance
    assert np.all(curve.norm <= bound * (1 + 1e-6))


def test_one_step_jacobian_is_diag_slope_times_w():
    # For T - k = 1: ∂h_T/∂h_{T-1} = diag(1 - h_T²) W_h, so its norm is at most σ_max(W_h) = η.
    model = _model(RNNClassifier)
    curve = gradients.jacobian_curve(model, length=2, samples=1)
    assert 0 < curve.norm[0] <= curve.eta


def test_scaling_w_moves_from_vanishing_to_exploding():
    model = _model(RNNClassifier, hidden=32)
    small = gradients.jacobian_curve(model, length=60, samples=2, scale=0.3)
    large = gradients.jacobian_curve(model, length=60, samples=2, scale=6.0)
    assert small.norm[-1] < 1e-6
    assert large.norm[:10].max() > 1.0


@pytest.mark.parametrize("cls", [GRUClassifier, LSTMClassifier])
def test_gated_curves_are_finite_and_positive(cls):
    curve = gradients.jacobian_curve(_model(cls), length=20, samples=1)
    assert curve.eta is None
    assert curve.distance.tolist() == list(range(1, 20))
    assert np.all(np.isfinite(curve.norm)) and np.all(curve.norm > 0)


def test_jacobian_curve_reads_the_model_only_through_its_public_surface():
    """recurrent_layer, vocab_size and embed are all it needs: no reaching into submodules."""
    inner = _model(GRUClassifier)

    class Facade:
        recurrent_layer = inner.recurrent_layer
        vocab_size = inner.vocab_size
        embed = staticmethod(inner.embed)

    a = gradients.jacobian_curve(Facade(), length=8, samples=1)
    b = gradients.jacobian_curve(inner, length=8, samples=1)
    np.testing.assert_allclose(a.norm, b.norm)


def test_saliency_matches_a_finite_difference():
    model = _model(LSTMClassifier)
    vocab = Vocab.build([[f"w{i}" for i in range(26)]])
    tokens = ["w1", "w5", "w9", "unknownword"]
    s = gradients.saliency(model, tokens, vocab)
    assert s.tokens == ["w1", "w5", "w9", "<unk>"] and s.norms.shape == (4,)
    # Nudge the word vector at position 1 along its gradient: the score changes by about eps * norm.
    ids = torch.tensor([vocab.encode(tokens)])
    with torch.enable_grad():
        emb = model.embed(ids).detach().requires_grad_(True)
        logits = model.forward_from_embeddings(emb, torch.tensor([4]))
        cls = int(logits[0].argmax())
        logits[0, cls].backward()
    direction = emb.grad[0, 1] / emb.grad[0, 1].norm()
    eps = 1e-3
    with torch.no_grad():
        nudged = emb.detach().clone()
        nudged[0, 1] += eps * direction
        change = model.forward_from_embeddings(nudged, torch.tensor([4]))[0, cls] - logits[0, cls]
    assert float(change) / eps == pytest.approx(float(s.norms[1]), rel=1e-2)
