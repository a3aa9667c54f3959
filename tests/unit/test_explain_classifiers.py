"""Is attention an explanation? The numbers behind it (seqviz.analysis.explain) for tiny untrained email
classifiers: the gradient against finite differences, leave-one-out and attention recomputed by hand, batched
measures against one email at a time, the mix path, the permutation test, and where "it" looks. The translators':
tests/unit/test_explain_analysis.py.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch
from explain_support import UNK_ID

from seqviz.analysis import explain
from seqviz.analysis.explain import batches
from seqviz.data.emails import CHAPTER_EMAILS, Email
from seqviz.models import build
from seqviz.tasks import pad_batch
from seqviz.text import UNK, Vocab, tokenize

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


# ---------------------------------------------------------------------------------------------------------
# Email classifiers: the same three measures for one decision, the permutation test, and where "it" looks

EMAILS = [tokenize(text) for text, _ in CHAPTER_EMAILS] + [["my", "invoice", "is", "wrong"], ["it"]]
EMAIL_VOCAB = Vocab.build(EMAILS)
TEAMS = ("lost_parcel", "missing_item", "damaged_item", "billing")


def tiny_classifier(name: str, seed: int = 0, double: bool = False):
    """An untrained email classifier, small enough for finite differences."""
    torch.manual_seed(seed)
    fields = {"vocab_size": len(EMAIL_VOCAB), "labels": TEAMS}
    if name == "transformer":
        fields |= {"d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "max_len": 32}
    elif name == "attention-lstm":
        fields |= {"emb_dim": 4, "hidden_dim": 3, "attn_dim": 5}
    else:
        fields |= {"emb_dim": 4, "hidden_dim": 5}
    model = build(name, fields)
    return (model.double() if double else model).eval()


def email_task(emails):
    """A stand-in EmailTask (the real one generates its data: seconds): its vocabulary and held-out emails."""
    return types.SimpleNamespace(vocab=EMAIL_VOCAB, splits=types.SimpleNamespace(
        test=[Email(tokens=tuple(e), label=0) for e in emails]))


@pytest.mark.parametrize("name", ["attention-lstm", "transformer", "gru"])
def test_classifier_gradient_matches_finite_differences(name):
    model = tiny_classifier(name, seed=1, double=True)
    tokens = EMAILS[0][:7]
    e = explain.explain_classification(model, EMAIL_VOCAB, tokens)
    ids = torch.tensor([EMAIL_VOCAB.encode(tokens)])  # (1, T)
    lengths = torch.tensor([len(tokens)])
    top = TEAMS.index(e.predicted)
    base = model.embed(ids).detach()  # (1, T, E)
    step = 1e-6
    with torch.inference_mode():
        for j in range(len(tokens)):
            grad = torch.zeros(base.size(-1), dtype=torch.float64)  # (E,)
            for k in range(base.size(-1)):
                up, down = base.clone(), base.clone()
                up[0, j, k] += step
                down[0, j, k] -= step
                plus = model.forward_from_embeddings(up, lengths).log_softmax(-1)[0, top]
                minus = model.forward_from_embeddings(down, lengths).log_softmax(-1)[0, top]
                grad[k] = (plus - minus) / (2 * step)
            assert e.gradient[j] == pytest.approx(float(grad.norm()), rel=1e-4, abs=1e-8)
    assert e.gradient.shape == e.leave_one_out.shape == (len(tokens),)


@pytest.mark.parametrize("name", ["attention-lstm", "transformer", "lstm"])
def test_classifier_leave_one_out_and_attention_recomputed_by_hand(name):
    model = tiny_classifier(name, seed=2)
    tokens = EMAILS[1] + ["zebra"]  # an unknown word: replacing it by <unk> changes nothing
    e = explain.explain_classification(model, EMAIL_VOCAB, tokens)
    ids = EMAIL_VOCAB.encode(tokens)
    T = len(ids)
    plain = model.predict_proba([ids], [T])[0]  # (C,)
    np.testing.assert_allclose(e.probs, plain, atol=1e-6)
    assert e.predicted == TEAMS[int(plain.argmax())] and e.p_predicted == pytest.approx(float(plain.max()), abs=1e-6)
    top = int(plain.argmax())
    for j in range(T):
        ablated = list(ids)
        ablated[j] = UNK_ID
        dropped = np.log(plain[top]) - np.log(model.predict_proba([ablated], [T])[0, top])
        assert e.leave_one_out[j] == pytest.approx(float(dropped), abs=1e-5)
    assert e.leave_one_out[-1] == 0.0 and e.tokens[-1] == UNK
    if name == "lstm":
        assert e.attention is None and e.agreement == {} and e.agrees("leave_one_out") is None
        return
    if name == "attention-lstm":
        expected = model.pooling_trace(tokens, EMAIL_VOCAB).weights  # α
    else:  # the last layer, averaged over heads and over the attending words
        expected = model.attention_trace(tokens, EMAIL_VOCAB).weights[-1].mean(axis=(0, 1))
    np.testing.assert_allclose(e.attention, expected, atol=1e-6)
    assert e.attention.sum() == pytest.approx(1.0, abs=1e-5)
    for measure in explain.MEASURES:
        assert e.agrees(measure) == pytest.approx(explain.kendall_tau(e.attention, getattr(e, measure)), abs=1e-12)
        assert e.agrees(measure, "weighted_tau") == explain.weighted_tau(e.attention, getattr(e, measure))


def test_classifier_taus_are_none_where_undefined_and_the_bag_of_words_is_refused():
    for name in ("attention-lstm", "transformer"):
        one = explain.explain_classification(tiny_classifier(name), EMAIL_VOCAB, ["it"])  # one word: no pair to rank
        assert one.attention.tolist() == pytest.approx([1.0])
        assert all(one.agrees(m, s) is None for m in explain.MEASURES for s in explain.STATISTICS)
        unknown = explain.explain_classification(tiny_classifier(name), EMAIL_VOCAB, ["zebra", "yak"])
        assert unknown.leave_one_out.tolist() == [0.0, 0.0] and unknown.agrees("leave_one_out") is None  # a constant
    with pytest.raises(ValueError):
        explain.explain_classification(types.SimpleNamespace(labels=TEAMS, training=False), EMAIL_VOCAB, ["it"])
    with pytest.raises(ValueError):
        explain.explain_classification(tiny_classifier("gru").train(), EMAIL_VOCAB, ["it"])
    with pytest.raises(ValueError):
        explain.explain_classification(tiny_classifier("gru"), EMAIL_VOCAB, [])
    with pytest.raises(ValueError):
        explain.held_out_classifier_taus(tiny_classifier("gru"), email_task(EMAILS))


def test_batched_classifier_measures_agree_with_one_email_at_a_time(monkeypatch):
    model = tiny_classifier("transformer", seed=3)
    emails = [EMAIL_VOCAB.encode(e) for e in EMAILS]
    monkeypatch.setattr(batches, "ROWS_PER_BATCH", 20)  # forces the four into several padded batches
    together = explain.explain_emails(model, emails, unk_id=UNK_ID)
    for e, ids in zip(together, emails, strict=True):
        (alone,) = explain.explain_emails(model, [ids], unk_id=UNK_ID)
        for field in ("probs", "attention", *explain.MEASURES):
            np.testing.assert_allclose(getattr(e, field), getattr(alone, field), atol=1e-5)
    taus = explain.held_out_classifier_taus(model, email_task(EMAILS), limit=3)
    assert taus.inputs == taus.outputs == 3 and len(taus.defined("gradient")) <= 3
    assert all(-1 <= t <= 1 for t in taus.defined("gradient") + taus.defined("leave_one_out"))


@pytest.mark.parametrize("name", ["attention-lstm", "transformer"])
def test_the_mix_path_with_the_real_weights_gives_the_plain_probabilities(name):
    """A classifier takes a mix as a translator does (seqviz.models.attention.Mix): the model's own weights passed
    back, or moved by the identity, give the plain probabilities."""
    model = tiny_classifier(name, seed=4)
    emails = [EMAIL_VOCAB.encode(e) for e in EMAILS]
    ids, lengths = pad_batch(emails)
    plain = model.predict_proba(ids, lengths)
    classes = torch.arange(len(TEAMS)).expand(len(emails), -1)  # (B, C): every class a target
    identity = explain.index_mix(torch.arange(ids.shape[1]).expand(len(emails), -1))
    with torch.inference_mode():
        for mix in (None, lambda weights, mask: weights, identity):
            log_p, _ = model.target_log_probs(ids, lengths, classes, mix=mix)  # (B, C)
            np.testing.assert_allclose(log_p.exp().numpy(), plain, atol=1e-6)
        uniform, weights = model.target_log_probs(ids, lengths, classes, mix=explain.uniform_weights)
    assert not np.allclose(uniform.exp().numpy(), plain, atol=1e-4)
    if name == "attention-lstm":  # the pooled weights are the replaced ones
        np.testing.assert_allclose(weights[:, 0].numpy(), (ids > 0).numpy() / lengths[:, None].numpy(), atol=1e-7)
        alpha = torch.from_numpy(model.attention_weights(ids, lengths))  # (B, T): the model's own tensor override
        np.testing.assert_allclose(model.predict_proba(ids, lengths, alpha), plain, atol=1e-6)
    with pytest.raises(ValueError):
        tiny_classifier("gru").target_log_probs(ids, lengths, classes, mix=explain.uniform_weights)


def test_permutation_test_is_bounded_reproducible_and_per_email():
    model = tiny_classifier("attention-lstm", seed=5)
    task = email_task(EMAILS[:3])
    result = explain.permutation_test(model, task, limit=None, permutations=6, seed=7)
    assert result.emails == 3 and result.permutations == 6
    for share in (result.changed_any, result.changed_most, result.uniform_changed):
        assert 0.0 <= share <= 1.0
    assert result.changed_most <= result.changed_any
    for value in (result.mean_difference, result.p90_difference, result.uniform_mean_difference):
        assert 0.0 <= value <= 1.0
    assert result.per_email_difference.shape == result.per_email_changed.shape == result.max_attention.shape == (3,)
    again = explain.permutation_test(model, task, limit=None, permutations=6, seed=7)
    np.testing.assert_array_equal(again.per_email_difference, result.per_email_difference)
    np.testing.assert_array_equal(again.per_email_changed, result.per_email_changed)
    # Each email's permutations are its own (seed and word ids), wherever it stands: the third alone agrees.
    alone = explain.permutation_test(model, email_task(EMAILS[2:3]), limit=None, permutations=6, seed=7)
    assert alone.per_email_difference[0] == pytest.approx(result.per_email_difference[2], abs=1e-9)
    # ... and by hand, through the model's own override: α permuted, the rest of the model unchanged.
    ids = EMAIL_VOCAB.encode(EMAILS[2])
    orders = explain.email_permutations(ids, 6, seed=7)
    assert orders.shape == (6, len(ids)) and all(sorted(o) == list(range(len(ids))) for o in orders)
    alpha = model.attention_weights([ids], [len(ids)])[0]  # (T,)
    plain = model.predict_proba([ids], [len(ids)])[0]
    top = int(plain.argmax())
    moved = [abs(model.predict_proba([ids], [len(ids)], torch.from_numpy(alpha[o][None]))[0, top] - plain[top])
             for o in orders]
    assert result.per_email_difference[2] == pytest.approx(float(np.mean(moved)), abs=1e-6)
    assert result.mean_difference == pytest.approx(float(np.mean(result.per_email_difference)), abs=1e-12)
    np.testing.assert_allclose(result.max_attention[2], alpha.max(), atol=1e-6)
    uniform = model.predict_proba([ids], [len(ids)], torch.full((1, len(ids)), 1 / len(ids)))[0, top]
    assert result.uniform_difference[2] == pytest.approx(abs(uniform - plain[top]), abs=1e-6)
    with pytest.raises(ValueError):  # no attention to permute
        explain.permutation_test(tiny_classifier("gru"), task, limit=2)


def test_permutation_test_of_no_email_says_nothing():
    """limit=0 (no held-out email): every figure None and every per-email array empty, not a crash."""
    result = explain.permutation_test(tiny_classifier("attention-lstm", seed=5), email_task(EMAILS[:3]), limit=0,
                                      permutations=4)
    assert result.emails == 0 and result.permutations == 4
    assert result.changed_any is result.mean_difference is result.uniform_changed is result.p90_difference is None
    assert result.per_email_difference.shape == result.per_email_changed.shape == result.max_attention.shape == (0,)


def test_pronoun_attention_shapes_rows_and_absence():
    model = tiny_classifier("transformer", seed=6)
    tokens = EMAILS[0]
    p = explain.pronoun_attention(model, EMAIL_VOCAB, tokens, word="it")
    L, N = model.config.n_layers, model.config.n_heads
    assert p.weights.shape == (L, N, len(tokens)) and p.strongest.shape == (L, N)
    assert p.position == max(j for j, t in enumerate(tokens) if t == "it") and p.tokens[p.position] == "it"
    np.testing.assert_allclose(p.weights.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(p.weights, model.attention_trace(tokens, EMAIL_VOCAB).weights[:, :, p.position],
                               atol=0)
    assert p.decision.leave_one_out.shape == (len(tokens),) and p.decision.tokens == p.tokens
    assert explain.pronoun_attention(model, EMAIL_VOCAB, EMAILS[2]) is None  # no "it" in it
    with pytest.raises(ValueError):
        explain.pronoun_attention(tiny_classifier("attention-lstm"), EMAIL_VOCAB, tokens)
