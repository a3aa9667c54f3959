"""Is attention an explanation? The numbers behind it (seqviz.analysis.explain), on tiny untrained translators
and email classifiers.

Kendall's τ against scipy and by hand (ties, constants); Captum's gradient saliency against finite differences
(double precision); Captum's leave-one-out (FeatureAblation) against recomputing each ablated sentence through the
plain forward pass, in float32 and in float64; the uniform and permuted weights (rows add to 1, padding 0) and
the mix path itself: the weights reaching a mix are the model's own, and the model's own weights passed back
through it give the plain path's logits. Integrated gradients, gradient × input and the ranking measures:
tests/unit/test_explain_attributions.py. The email classifiers' measures: tests/unit/test_explain_classifiers.py.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import scipy.stats
import torch
from explain_support import SOURCES, TARGETS, UNK_ID, VOCABULARIES

from seqviz.analysis import explain
from seqviz.analysis.explain import batches
from seqviz.models.common import BOS_ID
from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig
from seqviz.models.transformer_seq2seq import TransformerSeq2Seq, TransformerSeq2SeqConfig
from seqviz.tasks import TranslationTask, pad_batch

TRANSLATORS = ["additive", "dot", "transformer"]

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def tiny(name: str, seed: int = 0, double: bool = False):
    """An untrained translator, small enough for finite differences."""
    torch.manual_seed(seed)
    sizes = {"src_vocab_size": len(VOCABULARIES["src"]), "tgt_vocab_size": len(VOCABULARIES["tgt"])}
    if name == "transformer":
        model = TransformerSeq2Seq(TransformerSeq2SeqConfig(**sizes, d_model=8, n_heads=2, enc_layers=1,
                                                            dec_layers=2, d_ff=16))
    else:
        model = Seq2Seq(Seq2SeqConfig(kind=name, **sizes, emb_dim=4, hidden=6, attn_dim=5))
    return (model.double() if double else model).eval()


def teacher(ids: list[int], output: list[int]) -> tuple[torch.Tensor, ...]:
    src, lengths = pad_batch([ids])
    return src, lengths, torch.tensor([[BOS_ID, *output[:-1]]]), torch.tensor(output)


def log_p(logits: torch.Tensor, output: list[int]) -> torch.Tensor:
    """log p(y_t) (U,) of one sentence's output under logits (1, U, V)."""
    return logits[0].log_softmax(-1)[torch.arange(len(output)), torch.tensor(output)]


# ---------------------------------------------------------------------------------------------------------
# Kendall's τ


def test_kendall_tau_by_hand_and_against_scipy():
    assert explain.kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)  # 2 concordant, 1 discordant of 3
    assert explain.kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # a tie in a: 3 pairs, 1 tied in a, both others concordant: τ-b = 2 / √(2 · 3)
    assert explain.kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / np.sqrt(6))
    rng = np.random.default_rng(0)
    for size in (2, 3, 7, 30):
        for a, b in [(rng.normal(size=size), rng.normal(size=size)),
                     (rng.integers(0, 3, size=size), rng.integers(0, 3, size=size))]:  # many ties
            expected = scipy.stats.kendalltau(a, b).statistic
            got = explain.kendall_tau(a, b)
            assert (got is None) == bool(np.isnan(expected))
            if got is not None:
                assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("a, b", [([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]), ([1.0, 2.0], [5.0, 5.0]), ([1.0], [2.0]),
                                  ([], []), ([1.0, np.nan, 2.0], [1.0, 2.0, 3.0]), ([1.0, np.inf], [1.0, 2.0])])
def test_kendall_tau_is_none_where_undefined(a, b):
    assert explain.kendall_tau(a, b) is None
    assert explain.kendall_tau_rows(np.array([a]).reshape(1, -1), np.array([b]).reshape(1, -1)) == [None]


def test_kendall_tau_rows_agrees_with_kendall_tau():
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.normal(size=(5, 9)), rng.integers(0, 3, size=(5, 9)), np.ones((1, 9))])  # (11, 9)
    b = np.concatenate([rng.normal(size=(5, 9)), rng.integers(0, 2, size=(5, 9)), rng.normal(size=(1, 9))])
    b[2, 4] = np.nan
    for got, row_a, row_b in zip(explain.kendall_tau_rows(a, b), a, b, strict=True):
        expected = explain.kendall_tau(row_a, row_b)
        assert (got is None) == (expected is None)
        if got is not None:
            assert got == pytest.approx(expected, abs=1e-12)
    assert explain.mean_defined([None, 0.5, None, -0.25]) == pytest.approx(0.125)
    assert explain.mean_defined([None]) is None
    with pytest.raises(ValueError):
        explain.kendall_tau([1, 2], [1, 2, 3])


# ---------------------------------------------------------------------------------------------------------
# The measures


@pytest.mark.parametrize("name", TRANSLATORS)
def test_gradient_saliency_matches_finite_differences(name):
    model = tiny(name, seed=1, double=True)
    ids = VOCABULARIES["src"].encode(SOURCES[2])  # T = 6
    output = [5, 9, 4, 7]  # any output: the measures are teacher-forced on it
    (e,) = explain.explain_many(model, [ids], [output], unk_id=UNK_ID)
    src, lengths, tgt_in, _ = teacher(ids, output)
    base = model.embed_source(src).detach()  # (1, T, E)
    step = 1e-6
    with torch.inference_mode():
        for j in range(len(ids)):
            grad = torch.zeros(len(output), base.size(-1), dtype=torch.float64)  # (U, E)
            for k in range(base.size(-1)):
                up, down = base.clone(), base.clone()
                up[0, j, k] += step
                down[0, j, k] -= step
                plus = log_p(model.teacher_forced(src, lengths, tgt_in, embedded=up)[0], output)
                minus = log_p(model.teacher_forced(src, lengths, tgt_in, embedded=down)[0], output)
                grad[:, k] = (plus - minus) / (2 * step)
            np.testing.assert_allclose(e.gradient[:, j], grad.norm(dim=-1).numpy(), rtol=1e-4, atol=1e-7)
    assert e.gradient.shape == e.leave_one_out.shape == e.attention.shape == (len(output), len(ids))


@pytest.mark.parametrize("name", TRANSLATORS)
def test_leave_one_out_and_attention_recomputed_by_hand(name):
    model = tiny(name, seed=2)
    tokens = SOURCES[3] + ["zebra"]  # an unknown word: replacing it by <unk> changes nothing
    e = explain.explain_translation(model, VOCABULARIES, tokens, max_len=7)
    ids = VOCABULARIES["src"].encode(tokens)
    trace = model.trace(ids, VOCABULARIES["src"], VOCABULARIES["tgt"], max_len=7)
    assert e.src_tokens == trace.src_tokens and e.out_tokens == trace.out_tokens and len(e.out_tokens) == 7
    np.testing.assert_allclose(e.attention, trace.alignment, atol=1e-6)
    np.testing.assert_allclose(e.attention.sum(axis=1), 1.0, atol=1e-5)
    output = VOCABULARIES["tgt"].encode(e.out_tokens)
    src, lengths, tgt_in, _ = teacher(ids, output)
    with torch.inference_mode():
        whole = log_p(model(src, lengths, tgt_in), output).numpy()  # the plain forward pass
        np.testing.assert_allclose(e.log_prob, whole, atol=1e-5)
        for j in range(len(ids)):
            ablated = src.clone()
            ablated[0, j] = UNK_ID
            dropped = whole - log_p(model(ablated, lengths, tgt_in), output).numpy()
            np.testing.assert_allclose(e.leave_one_out[:, j], dropped, atol=1e-5)
    assert np.all(e.leave_one_out[:, -1] == 0.0)  # "zebra" already was <unk>: exactly 0
    for measure in explain.MEASURES:
        assert e.agreement[measure].tau == explain.kendall_tau_rows(e.attention, getattr(e, measure))


@pytest.mark.parametrize("name", TRANSLATORS)
def test_leave_one_out_is_taken_in_float64(name):
    """The float32 model's leave-one-out is its float64 copy's, to float64's rounding: values under 1e-5 keep
    their order (in float32 they would be rounding)."""
    model = tiny(name, seed=7)
    ids = VOCABULARIES["src"].encode(SOURCES[3])
    output = [5, 9, 4, 7, 6]
    (e,) = explain.explain_many(model, [ids], [output], unk_id=UNK_ID)
    double = tiny(name, seed=7, double=True)
    src, lengths, tgt_in, _ = teacher(ids, output)
    with torch.inference_mode():
        whole = log_p(double(src, lengths, tgt_in), output).numpy()
        for j in range(len(ids)):
            ablated = src.clone()
            ablated[0, j] = UNK_ID
            dropped = whole - log_p(double(ablated, lengths, tgt_in), output).numpy()
            np.testing.assert_allclose(e.leave_one_out[:, j], dropped, rtol=1e-9, atol=1e-12)
    assert e.leave_one_out.dtype == np.float64 and e.log_prob.dtype == np.float64


def test_batched_measures_agree_with_one_sentence_at_a_time(monkeypatch):
    model = tiny("transformer", seed=3)
    sources = [VOCABULARIES["src"].encode(s) for s in SOURCES]
    outputs = [[5, 6, 7], [4], [], [8, 9, 10, 11, 12], [6, 6], [13]]
    monkeypatch.setattr(batches, "ROWS_PER_BATCH", 20)  # forces the six into several batches
    together = explain.explain_many(model, sources, outputs, unk_id=UNK_ID)
    assert together[2].attention.shape == (0, len(sources[2])) and together[2].agreement["gradient"].tau == []
    for e, ids, out in zip(together, sources, outputs, strict=True):
        (alone,) = explain.explain_many(model, [ids], [out], unk_id=UNK_ID)
        for field in ("attention", *explain.MEASURES, "log_prob", "completeness_gap"):
            np.testing.assert_allclose(getattr(e, field), getattr(alone, field), atol=1e-5)


def test_explain_refuses_an_empty_sentence_and_a_training_model():
    with pytest.raises(ValueError):
        explain.explain_translation(tiny("dot"), VOCABULARIES, [])
    with pytest.raises(ValueError):
        explain.explain_translation(tiny("dot").train(), VOCABULARIES, SOURCES[0])


# ---------------------------------------------------------------------------------------------------------
# Ablations


def test_uniform_and_permuted_weights_keep_rows_adding_to_one():
    src, lengths = pad_batch([VOCABULARIES["src"].encode(s) for s in SOURCES])  # (6, 16): five padded
    B = len(SOURCES)
    mask = (torch.arange(src.size(1))[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, T)
    weights = torch.softmax(torch.randn(B, 2, 3, src.size(1)).masked_fill(~mask, float("-inf")), -1)  # (B, N, U, T)
    uniform = explain.uniform_weights(weights, mask)
    permuted = explain.permutation_mix(src, lengths, seed=5)(weights, mask)
    for mixed in (uniform, permuted):
        torch.testing.assert_close(mixed.sum(-1), torch.ones(B, 2, 3), atol=1e-6, rtol=0)
        assert torch.all(mixed.masked_select(~mask) == 0)
    # where each word's weight went: weights j + 1 (over the real words) come back as the permutation π + 1
    positions = (torch.arange(src.size(1)) + 1.0).expand(B, 2, 3, -1) * mask  # (B, N, U, T)
    moved = explain.permutation_mix(src, lengths, seed=5)(positions, mask).long() - 1  # (B, N, U, T)
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(uniform[b, ..., :n], torch.full((2, 3, n), 1 / n))
        pi = moved[b, 0, 0, :n]  # one permutation of the real words ...
        assert sorted(pi.tolist()) == list(range(n)) and pi.tolist() != list(range(n))
        assert torch.all(moved[b, ..., :n] == pi)  # ... for every head and step: α'_tj = α_tπ(j)
        torch.testing.assert_close(permuted[b, ..., :n], weights[b, ..., :n][..., pi], atol=0, rtol=0)
    again = explain.permutation_mix(src, lengths, seed=5)(weights, mask)
    assert torch.equal(again, permuted)  # seeded: the same permutation every time
    alone = explain.permutation_mix(src[1:2, : lengths[1]], lengths[1:2], seed=5)(weights[1:2, ..., : lengths[1]],
                                                                                  mask[1:2, ..., : lengths[1]])
    assert torch.equal(alone, permuted[1:2, ..., : lengths[1]])  # the same alone as in a padded batch
    with pytest.raises(ValueError):
        explain.ablation_mix("shuffled", src, lengths)


@pytest.mark.parametrize("name", TRANSLATORS)
def test_the_mix_path_changes_nothing_but_the_weights(name):
    """The weights reaching a mix are the model's own; passed back unchanged, the logits are the plain path's."""
    model = tiny(name, seed=4)
    batch = [VOCABULARIES["src"].encode(s) for s in SOURCES]
    src, lengths = pad_batch(batch)
    tgt_in, _ = pad_batch([[BOS_ID, *VOCABULARIES["tgt"].encode(t)] for t in TARGETS])
    seen = []

    def same(weights, mask):
        seen.append(weights)
        return weights

    with torch.inference_mode():
        plain = model(src, lengths, tgt_in)  # (B, U, V)
        logits, weights = model.teacher_forced(src, lengths, tgt_in, mix=same)
        unmixed_logits, unmixed = model.teacher_forced(src, lengths, tgt_in)
        torch.testing.assert_close(logits, plain, atol=1e-6, rtol=0)
        torch.testing.assert_close(unmixed_logits, plain, atol=1e-6, rtol=0)
        torch.testing.assert_close(weights, unmixed, atol=0, rtol=0)
        if name == "transformer":  # every layer's cross-attention; teacher_forced returns the last, head-averaged
            assert len(seen) == model.config.dec_layers
            torch.testing.assert_close(seen[-1].mean(dim=1), weights, atol=0, rtol=0)
        else:  # one row per step (additive) or all at once (dot)
            torch.testing.assert_close(torch.cat(seen, dim=1), weights, atol=0, rtol=0)
        assert model.translate(src, lengths, 9, mix=same) == model.translate(src, lengths, 9)
        uniform_logits, uniform = model.teacher_forced(src, lengths, tgt_in, mix=explain.uniform_weights)
        torch.testing.assert_close(uniform.sum(-1), torch.ones(uniform.shape[:2]), atol=1e-6, rtol=0)
        assert not torch.allclose(uniform_logits, plain)


@pytest.mark.parametrize("name", TRANSLATORS)
def test_ablated_translation_is_the_teacher_forced_argmax(name):
    """Greedy decoding with a mix writes what teacher forcing with the same mix predicts, word by word: the
    permutation is one per sentence, the same at every step (the transformer reads its prefix again each step)."""
    model = tiny(name, seed=5)
    tokens = SOURCES[3]
    ids = VOCABULARIES["src"].encode(tokens)
    for ablation in explain.ABLATIONS:
        written = VOCABULARIES["tgt"].encode(explain.translate_with(model, VOCABULARIES, tokens, ablation, max_len=8))
        src, lengths, tgt_in, _ = teacher(ids, written)
        with torch.inference_mode():
            logits, _ = model.teacher_forced(src, lengths, tgt_in, mix=explain.ablation_mix(ablation, src, lengths))
        assert logits[0].argmax(-1).tolist() == written


def test_held_out_exact_match_and_taus_on_a_stand_in_task():
    model = tiny("additive", seed=6)
    own = model.translate_many([VOCABULARIES["src"].encode(s) for s in SOURCES])
    task = TranslationTask.__new__(TranslationTask)  # the real one generates its data: seconds
    task.src_vocab, task.tgt_vocab, task.max_train_src_len = VOCABULARIES["src"], VOCABULARIES["tgt"], 8
    pairs = [types.SimpleNamespace(src=s, tgt=VOCABULARIES["tgt"].decode(o)) for s, o in zip(SOURCES, own, strict=True)]
    task.splits = types.SimpleNamespace(test=pairs)  # the reference is the model's own output
    short = [i for i, p in enumerate(pairs) if len(p.src) <= 8]  # three of the six are as long as "training"'s
    real = explain.held_out_exact_match(model, task, "none")
    assert (real.ablation, real.n, real.exact_match, real.token_accuracy) == ("none", 3, 1.0, 1.0)
    assert explain.held_out_exact_match(model, task, "none", limit=2).n == 2
    for ablation in ("uniform", "permuted"):
        ablated = explain.held_out_exact_match(model, task, ablation)
        expected = [explain.translate_with(model, VOCABULARIES, pairs[i].src, ablation) == list(pairs[i].tgt)
                    for i in short]
        assert ablated.exact_match == pytest.approx(np.mean(expected))
    taus = explain.held_out_taus(model, task, limit=None)
    assert taus.inputs == 3 and taus.outputs == sum(len(own[i]) for i in short)
    assert set(taus.agreement) == {"gradient", "leave_one_out"}  # Jain & Wallace's two
    for measure, agreement in taus.agreement.items():
        assert len(agreement.tau) == len(agreement.top1) == taus.outputs  # one entry per output word
        assert all(-1 <= t <= 1 for t in taus.defined(measure) + taus.defined(measure, "weighted_tau"))
