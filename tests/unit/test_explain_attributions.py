"""Captum's attributions on /explain and the measures that weigh the top of a ranking (seqviz.analysis.explain),
on tiny untrained translators and email classifiers.

Integrated gradients meet completeness: each output's attributions add up to f(x) − f(baseline), recomputed
here by two plain forward passes, within COMPLETENESS_TOLERANCE. Gradient × input is the gradient, by autograd
here, times the input. The one model interface gives the plain path's log-probabilities. Weighted τ is scipy's;
top-1 and top-3 agreement by hand, ties included; a peaked attention shows why a plain τ misleads.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
import torch

from seqviz.analysis import explain
from seqviz.models import build
from seqviz.models.common import BOS_ID
from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig
from seqviz.models.transformer_seq2seq import TransformerSeq2Seq, TransformerSeq2SeqConfig
from seqviz.tasks import pad_batch
from seqviz.text import UNK, Vocab, tokenize

SOURCES = [s.split() for s in ("where is my order ?", "my red phone never arrived .", "the parcel is late")]
TARGETS = [t.split() for t in ("où est ma commande ?", "mon téléphone rouge n'est jamais arrivé .")]
VOCABULARIES = {"src": Vocab.build(SOURCES), "tgt": Vocab.build(TARGETS)}
EMAILS = [tokenize(t) for t in ("The charger never came, but the parcel did.", "my invoice is wrong", "it")]
EMAIL_VOCAB = Vocab.build(EMAILS)
TEAMS = ("lost_parcel", "missing_item", "damaged_item", "billing")

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def translator(name: str, seed: int = 0):
    """An untrained translator in float64 (its gradients are taken in the model's own precision)."""
    torch.manual_seed(seed)
    sizes = {"src_vocab_size": len(VOCABULARIES["src"]), "tgt_vocab_size": len(VOCABULARIES["tgt"])}
    if name == "transformer":
        return TransformerSeq2Seq(TransformerSeq2SeqConfig(**sizes, d_model=8, n_heads=2, enc_layers=1, dec_layers=1,
                                                           d_ff=16)).double().eval()
    return Seq2Seq(Seq2SeqConfig(kind=name, **sizes, emb_dim=4, hidden=6, attn_dim=5)).double().eval()


def classifier(name: str, seed: int = 0):
    torch.manual_seed(seed)
    fields = {"vocab_size": len(EMAIL_VOCAB), "labels": TEAMS}
    sizes = {"transformer": {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": 32},
             "attention-lstm": {"emb_dim": 4, "hidden_dim": 3, "attn_dim": 5}}
    fields |= sizes.get(name, {"emb_dim": 4, "hidden_dim": 5})
    return build(name, fields).double().eval()


def explained(kind: str, name: str):
    """(explanation rows (U, T) as a dict of arrays, model, src (1, T), lengths (1,), targets (1, U))."""
    if kind == "translator":
        model = translator(name, seed=3)
        ids = VOCABULARIES["src"].encode(SOURCES[1])
        output = [4, 7, 5, 9, 6]
        (e,) = explain.explain_many(model, [ids], [output], unk_id=VOCABULARIES["src"].stoi[UNK])
        return vars(e), model, ids, output
    model = classifier(name, seed=3)
    ids = EMAIL_VOCAB.encode(EMAILS[0])
    e = explain.explain_classification(model, EMAIL_VOCAB, EMAILS[0])
    rows = {m: getattr(e, m)[None] for m in explain.MEASURES} | {"completeness_gap": np.array([e.completeness_gap])}
    return rows, model, ids, [TEAMS.index(e.predicted)]


CASES = [("translator", "additive"), ("translator", "dot"), ("translator", "transformer"),
         ("classifier", "attention-lstm"), ("classifier", "transformer"), ("classifier", "lstm")]


@pytest.mark.parametrize("kind, name", CASES)
def test_integrated_gradients_add_up_to_the_change_from_the_baseline(kind, name):
    """Completeness: Σ_j IG_tj = f_t(x) − f_t(all-zero word vectors), within COMPLETENESS_TOLERANCE nats, both sides
    recomputed here through the model's own log-probabilities."""
    rows, double, ids, output = explained(kind, name)
    src, lengths = pad_batch([ids])
    targets = torch.tensor([output])  # (1, U)
    with torch.inference_mode():
        embedded = double.embed_source(src)  # (1, T, E)
        f_x = double.target_log_probs(src, lengths, targets, embedded=embedded)[0][0].numpy()  # (U,)
        f_0 = double.target_log_probs(src, lengths, targets, embedded=torch.zeros_like(embedded))[0][0].numpy()
    total = rows["integrated_gradients"].sum(axis=1)  # (U,)
    gap = np.abs(total - (f_x - f_0))  # (U,)
    assert np.all(gap <= explain.COMPLETENESS_TOLERANCE)
    # these small models are smooth: the gap is under 1% of the largest change (attributions of 0 would be 100%)
    assert gap.max() <= 0.01 * np.abs(f_x - f_0).max()
    np.testing.assert_allclose(rows["completeness_gap"], total - (f_x - f_0), atol=1e-9)  # Captum's delta, the same


@pytest.mark.parametrize("kind, name", CASES)
def test_gradient_times_input_is_the_gradient_times_the_input(kind, name):
    """Captum's InputXGradient (summed over each word's vector) and Saliency's norm against autograd by hand."""
    rows, double, ids, output = explained(kind, name)
    src, lengths = pad_batch([ids])
    targets = torch.tensor([output])
    embedded = double.embed_source(src).detach().requires_grad_(True)  # (1, T, E)
    log_p = double.target_log_probs(src, lengths, targets, embedded=embedded)[0][0]  # (U,)
    for t in range(len(output)):
        (grad,) = torch.autograd.grad(log_p[t], embedded, retain_graph=True)  # (1, T, E)
        np.testing.assert_allclose(rows["gradient_x_input"][t], (grad * embedded)[0].sum(-1).detach().numpy(),
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(rows["gradient"][t], grad[0].norm(dim=-1).numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["additive", "dot", "transformer"])
def test_a_translators_target_log_probs_are_its_teacher_forced_ones(name):
    model = translator(name, seed=1)
    src, lengths = pad_batch([VOCABULARIES["src"].encode(s) for s in SOURCES])
    targets, _ = pad_batch([VOCABULARIES["tgt"].encode(t) for t in [*TARGETS, ["où", "est"]]])  # (B, U)
    tgt_in, _ = pad_batch([[BOS_ID, *VOCABULARIES["tgt"].encode(t)[:-1]] for t in [*TARGETS, ["où", "est"]]])
    with torch.inference_mode():
        log_p, weights = model.target_log_probs(src, lengths, targets)  # (B, U), (B, U, T)
        logits, alpha = model.teacher_forced(src, lengths, tgt_in)
    expected = logits.log_softmax(-1).gather(-1, targets[..., None])[..., 0]
    real = targets > 0  # the rows past a sentence's end read whatever follows it
    torch.testing.assert_close(log_p[real], expected[real], atol=1e-6, rtol=0)
    torch.testing.assert_close(weights[real], alpha[real], atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ["attention-lstm", "transformer", "gru"])
def test_a_classifiers_target_log_probs_are_its_plain_ones(name):
    model = classifier(name, seed=2)
    ids, lengths = pad_batch([EMAIL_VOCAB.encode(e) for e in EMAILS])
    with torch.inference_mode():
        log_p, weights = model.target_log_probs(ids, lengths, torch.tensor([[0, 2], [1, 1], [3, 0]]))  # (B, 2)
        plain = model(ids, lengths).log_softmax(-1)  # (B, C)
    torch.testing.assert_close(log_p, plain.gather(-1, torch.tensor([[0, 2], [1, 1], [3, 0]])), atol=1e-6, rtol=0)
    assert (weights is None) == (not model.has_attention)
    if weights is not None:  # one row per email, the same for every class asked about
        assert weights.shape == (3, 2, ids.shape[1]) and torch.equal(weights[:, 0], weights[:, 1])
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, dtype=weights.dtype), atol=1e-6, rtol=0)


# ---------------------------------------------------------------------------------------------------------
# Measures that weigh the top of the ranking


def test_weighted_tau_is_scipys_and_top_k_agreement_is_by_hand():
    rng = np.random.default_rng(0)
    for size in (2, 5, 12):
        a, b = rng.normal(size=size), rng.normal(size=size)
        assert explain.weighted_tau(a, b) == pytest.approx(scipy.stats.weightedtau(a, b).statistic, abs=1e-12)
    assert explain.weighted_tau([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == pytest.approx(1.0)
    for undefined in (([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]), ([1.0], [2.0]), ([1.0, np.nan], [1.0, 2.0])):
        assert explain.weighted_tau(*undefined) is None
    assert explain.top_k_agree([0.1, 0.7, 0.2], [5, 9, 1], 1) is True
    assert explain.top_k_agree([0.1, 0.7, 0.2], [9, 5, 1], 1) is False
    assert explain.top_k_agree([4, 3, 2, 1, 0], [0, 9, 8, 7, 1], 3) is False  # {0, 1, 2} against {1, 2, 3}
    assert explain.top_k_agree([4, 3, 2, 1, 0], [7, 9, 8, 0, 1], 3) is True  # the same three, in another order
    assert explain.top_k_agree([4, 3, 2, 2, 0], [7, 9, 8, 0, 1], 3) is None  # a tie across third place
    assert explain.top_k_agree([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], 3) is None  # three words: nothing to leave out
    assert explain.top_k_agree([1.0], [1.0], 1) is None


def test_a_peaked_attention_misleads_a_plain_tau_and_not_the_top_weighted_measures():
    """/explain's Email B, in miniature: attention and leave-one-out put the same word first, and the dozen
    near-zero words below it, ranked in opposite orders, give a negative τ; the top-weighted measures see the
    agreement at the top."""
    attention = np.array([0.9, *np.linspace(0.012, 0.001, 10)])  # (11,): one word takes nearly all the weight
    loo = np.array([2.0, 1.0, 0.5, *np.linspace(-0.001, 0.001, 8)])  # (11,): the same top word, the tail reversed
    a = explain.agreement(attention[None], loo[None])
    assert a.tau[0] < 0 and a.top1[0] is True and a.top3[0] is True and a.weighted_tau[0] > a.tau[0] + 0.4
    assert a.mean("top1") == 1.0 and (a + a).tau == [a.tau[0], a.tau[0]]


def test_held_out_agreement_means_and_histograms():
    agreement = explain.Agreement(tau=[0.5, None, -0.25], weighted_tau=[0.5, None, 0.0], top1=[True, None, False],
                                  top3=[None, None, None])
    held = explain.HeldOutAgreement({"gradient": agreement}, inputs=2, outputs=3)
    assert held.mean("gradient") == pytest.approx(0.125) and held.mean("gradient", "top1") == 0.5
    assert held.mean("gradient", "top3") is None and held.defined("gradient") == [0.5, -0.25]


def test_held_out_means_are_means_not_medians():
    """Values whose mean and median differ (two values, as above, cannot tell them apart): τ of 1, 0 and 0.2 has
    mean 0.4 and median 0.2; top-1 of True, True, False has share 2/3 and median 1."""
    agreement = explain.Agreement(tau=[1.0, None, 0.0, 0.2, None], weighted_tau=[1.0, 0.0, 0.2, 0.0, 0.0],
                                  top1=[True, None, True, False, None], top3=[None] * 5)
    held = explain.HeldOutAgreement({"gradient": agreement}, inputs=5, outputs=5)
    assert held.mean("gradient") == pytest.approx(0.4)
    assert held.mean("gradient", "weighted_tau") == pytest.approx(0.24)  # median 0.0
    assert held.mean("gradient", "top1") == pytest.approx(2 / 3)
    assert explain.mean_defined([1.0, None, 0.0, 0.2]) == pytest.approx(0.4)


def test_integrated_gradients_take_more_steps_where_the_gap_is_over_the_tolerance(monkeypatch):
    """Two points miss completeness by far more than 1e-8 nats; those outputs are redone with 50, and every output
    ends within the tolerance, as a 50-point run of them all."""
    from seqviz.analysis.explain import importance

    monkeypatch.setattr(importance, "COMPLETENESS_TOLERANCE", 1e-8)
    monkeypatch.setattr(importance, "IG_STEPS", (50,))
    rows, *_ = explained("translator", "additive")
    monkeypatch.setattr(importance, "IG_STEPS", (2,))
    coarse, *_ = explained("translator", "additive")
    monkeypatch.setattr(importance, "IG_STEPS", (2, 50))
    refined, *_ = explained("translator", "additive")
    assert np.all(np.abs(coarse["completeness_gap"]) > 1e-8)
    assert np.all(np.abs(refined["completeness_gap"]) <= 1e-8)
    np.testing.assert_allclose(refined["integrated_gradients"], rows["integrated_gradients"], atol=1e-12)


def test_only_the_measures_asked_for_are_taken():
    model = translator("dot", seed=4)
    ids = VOCABULARIES["src"].encode(SOURCES[0])
    (all_four,) = explain.explain_many(model, [ids], [[4, 5, 6]], unk_id=1)
    (two,) = explain.explain_many(model, [ids], [[4, 5, 6]], unk_id=1, measures=("leave_one_out", "gradient"))
    assert all_four.measures == explain.MEASURES and two.measures == ("gradient", "leave_one_out")
    assert two.integrated_gradients is None and two.completeness_gap is None and set(two.agreement) == set(two.measures)
    for measure in two.measures:
        np.testing.assert_array_equal(getattr(two, measure), getattr(all_four, measure))
    with pytest.raises(ValueError):
        explain.explain_many(model, [ids], [[4]], unk_id=1, measures=("saliency",))
