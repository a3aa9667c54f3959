"""Tests written for mutmut's survivors in seqviz/analysis/explain/ (issue 28, scripts/mutation
seqviz/analysis/explain/): the agreement statistics against hand-counted pairs, the batches' edges, the ablations'
weights by hand, the permutation test's defaults, and every refusal word for word."""

from __future__ import annotations

import importlib
import re
import types

import numpy as np
import pytest
import torch

from seqviz.analysis import explain
from seqviz.analysis.explain import batches

agree = importlib.import_module("seqviz.analysis.explain.agreement")  # the package's agreement is the function


def refuses(message: str):
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


# ---- agreement ---------------------------------------------------------------------------------------------------


def test_kendall_tau_of_three_words_by_hand():
    """Pairs (1, 2) and (1, 3) agree, (2, 3) disagree: τ = (2 − 1) / 3."""
    assert explain.kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert explain.kendall_tau_rows([[1, 2, 3], [3, 2, 1]], [[1, 3, 2], [1, 2, 3]]) == [
        pytest.approx(1 / 3), pytest.approx(-1.0)]


@pytest.mark.parametrize(("a", "b"), [([1], [2]), ([1, 1], [1, 2]), ([1, 2], [3, 3]), ([1, np.nan], [1, 2]),
                                      ([1, 2], [np.inf, 2])])
def test_a_ranking_that_is_not_defined_gives_none(a, b):
    assert explain.kendall_tau(a, b) is None and explain.weighted_tau(a, b) is None
    assert explain.kendall_tau_rows([a], [b]) == [None]


def test_weighted_tau_is_scipys_and_top_k_agreement_at_its_edges():
    from scipy.stats import weightedtau

    a, b = [0.5, 0.3, 0.1, 0.05], [0.4, 0.1, 0.3, 0.2]
    assert explain.weighted_tau(a, b) == pytest.approx(weightedtau(a, b).statistic)
    assert explain.top_k_agree(a, b, 1) is True and explain.top_k_agree(a, b, 2) is False
    assert explain.top_k_agree([3, 2, 1], [3, 1, 2], 3) is None  # as many words as k: no "top k" to compare
    assert explain.top_k_agree([3, 2, 2, 1], [1, 2, 3, 4], 2) is None  # a tie across the 2nd place
    assert explain.top_k_agree([3, 2, 2, 1], [1, 2, 3, 4], 1) is False
    assert explain.top_k_agree([3, 2, 1, 0], [3, np.nan, 1, 0], 1) is None


def test_agreement_rows_their_means_and_sums():
    result = explain.agreement([[4, 3, 2, 1], [1, 1, 1, 1]], [[4, 3, 1, 2], [1, 2, 3, 4]])
    assert result.tau == [pytest.approx(4 / 6), None] and result.top1 == [True, None]
    assert result.top3 == [False, None] and result.weighted_tau[1] is None  # {0, 1, 2} against {0, 1, 3}
    assert result.mean("tau") == pytest.approx(4 / 6) and result.mean("top1") == 1.0
    both = result + explain.agreement([[1, 2, 3, 4]], [[4, 3, 2, 1]])
    assert both.tau == [*result.tau, pytest.approx(-1.0)] and both.top1 == [True, None, False]
    assert both.mean("top1") == 0.5 and explain.mean_defined([True, None, 0.5]) == 0.75
    assert explain.mean_defined([None, None]) is None


def test_vectors_and_matrices_of_different_shapes_are_refused():
    with refuses("two vectors of one length, not 2 and 3"):
        explain.kendall_tau([1, 2], [1, 2, 3])
    with refuses("two matrices of one shape, not (2,) and (2,)"):
        explain.agreement([1, 2], [1, 2])
    with refuses("two matrices of one shape, not (1, 2) and (1, 3)"):
        explain.agreement([[1, 2]], [[1, 2, 3]])
    assert agree._rankable(np.array([1.0, 2.0]), np.array([2.0, 1.0]))


# ---- batches -----------------------------------------------------------------------------------------------------


def test_a_model_without_vectors_or_in_training_is_refused():
    class OnlyVectors:
        def embed_source(self, src):
            return src

    for model in (object(), OnlyVectors()):
        with refuses(f"explain a torch model with word vectors, not a {type(model).__name__}: the bag of words has "
                     "no vectors to take a gradient by"):
            batches.check_explainable(model)
    training = types.SimpleNamespace(embed_source=None, target_log_probs=None, training=True)
    with refuses("explain a model in eval mode: dropout would make every measure a random draw"):
        batches.check_explainable(training)
    batches.check_explainable(types.SimpleNamespace(embed_source=None, target_log_probs=None, training=False))


def test_a_float64_copy_leaves_the_model_as_it_was():
    model = torch.nn.Linear(2, 1)
    copy = batches.in_float64(model)
    assert copy is not model and copy.weight.dtype == torch.float64 and model.weight.dtype == torch.float32


def test_chunks_fill_a_batch_exactly_and_not_past_it():
    full = batches.ROWS_PER_BATCH
    assert batches.chunks({0: full // 2, 1: full // 2, 2: 1}) == [[0, 1], [2]]
    assert batches.chunks({0: full - 1, 1: 1, 2: 1}) == [[0, 1], [2]]
    assert batches.chunks({0: full + 5, 1: 1}) == [[0], [1]]  # an item larger than a batch goes alone
    assert batches.chunks({}) == []


def test_spread_picks_evenly_and_all_at_or_past_the_length():
    items = list(range(10))
    assert batches.spread(items, None) == items and batches.spread(items, 10) == items
    assert batches.spread(items, 11) == items and batches.spread(items, 9) == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    assert batches.spread(items, 3) == [0, 4, 9] and batches.spread(items, 0) == []
    assert batches.spread(items, -2) == [] and batches.spread(items, 1) == [0]


def test_held_out_pairs_as_long_as_training_and_emails():
    pairs = [types.SimpleNamespace(src=["w"] * n) for n in (3, 4, 5)]
    task = types.SimpleNamespace(max_train_src_len=4, splits=types.SimpleNamespace(test=pairs))
    assert batches.held_out_pairs(task) == pairs[:2] and batches.held_out_pairs(task, 1) == pairs[:1]
    assert batches.held_out_emails(task) == pairs and batches.held_out_emails(task, 2) == [pairs[0], pairs[2]]


# ---- ablations ---------------------------------------------------------------------------------------------------


def test_uniform_and_moved_weights_by_hand():
    weights = torch.tensor([[[0.7, 0.2, 0.1, 0.0]]])  # (1, 1, 4): three real words
    mask = torch.tensor([[[True, True, True, False]]])
    assert explain.uniform_weights(weights, mask).tolist() == [[[pytest.approx(1 / 3)] * 3 + [0.0]]]
    moved = explain.index_mix(torch.tensor([[2, 0, 1, 3]]))(weights, mask)
    assert moved.tolist() == [[[pytest.approx(0.1), pytest.approx(0.7), pytest.approx(0.2), 0.0]]]


def test_a_sentences_permutation_is_drawn_from_the_seed_and_its_words():
    src, lengths = torch.tensor([[7, 8, 9, 0], [5, 6, 0, 0]]), torch.tensor([3, 2])
    weights = torch.arange(8, dtype=torch.float64).view(2, 1, 4)
    moved = explain.permutation_mix(src, lengths, seed=4)(weights, None)
    for b, n in enumerate((3, 2)):
        order = np.random.default_rng([4, *src[b, :n].tolist()]).permutation(n)
        assert moved[b, 0, :n].tolist() == weights[b, 0, order].tolist()
        assert moved[b, 0, n:].tolist() == weights[b, 0, n:].tolist()  # padding stays
    default = explain.permutation_mix(src, lengths)(weights, None)
    assert default[0, 0, :3].tolist() == weights[0, 0, np.random.default_rng([0, 7, 8, 9]).permutation(3)].tolist()
    assert explain.email_permutations([7, 8, 9], 2).tolist() == [
        list(p) for p in (lambda rng: [rng.permutation(3), rng.permutation(3)])(np.random.default_rng([0, 7, 8, 9]))]


def test_the_ablations_by_name():
    src, lengths = torch.tensor([[7, 8]]), torch.tensor([2])
    assert explain.ablation_mix("none", src, lengths) is None
    assert explain.ablation_mix("uniform", src, lengths) is explain.uniform_weights
    assert explain.check_ablation("permuted") == "permuted"
    with refuses("ablation must be one of ('none', 'uniform', 'permuted'), not 'shuffled'"):
        explain.ablation_mix("shuffled", src, lengths)


def test_held_out_exact_match_by_hand():
    """Three held-out pairs (one too long to count): one output exact, one a word short."""
    pairs = [types.SimpleNamespace(src=["a"], tgt=["x", "y"]), types.SimpleNamespace(src=["b"], tgt=["z", "z", "z"]),
             types.SimpleNamespace(src=["c"] * 5, tgt=["q"])]
    answers = {("a",): ["x", "y"], ("b",): ["z", "z"]}
    seen = []

    def translate(model, sources):
        seen.append((model.ablation, model.seed))
        return [answers[tuple(s)] for s in sources]

    task = types.SimpleNamespace(max_train_src_len=4, splits=types.SimpleNamespace(test=pairs), translate=translate)
    result = explain.held_out_exact_match(object(), task, "uniform", seed=3)
    assert result == explain.HeldOutMatch(ablation="uniform", n=2, exact_match=0.5, token_accuracy=4 / 5)
    assert seen == [("uniform", 3)]
    assert explain.held_out_exact_match(object(), task).ablation == "none" and seen[-1] == ("none", 0)
    empty = types.SimpleNamespace(max_train_src_len=0, splits=types.SimpleNamespace(test=pairs), translate=translate)
    assert explain.held_out_exact_match(object(), empty) == explain.HeldOutMatch("none", 0, None, None)


# ---- the permutation test, on a model whose answer is its attention ----------------------------------------------


class Pointer:
    """A two-class 'classifier' that attends α_j ∝ T − j over its T words and answers class c with logit 5 α'_c,
    α' being the weights after the mix: where its attention falls decides its answer."""

    has_attention, training, labels = True, False, ("first", "second")

    def embed_source(self, src):
        return src

    def tilt(self, lengths):  # added to the two logits (none here)
        return torch.zeros(len(lengths), 2, dtype=torch.float64)

    def target_log_probs(self, ids, lengths, classes, mix=None):
        T = ids.shape[1]
        alpha = torch.stack([torch.where(torch.arange(T) < n, (n - torch.arange(T)).double(), 0.0) for n in lengths])
        alpha = (alpha / alpha.sum(-1, keepdim=True))[:, None, :]  # (R, 1, T)
        mask = (torch.arange(T)[None, :] < lengths[:, None])[:, None, :]
        mixed = alpha if mix is None else mix(alpha, mask)
        log_p = torch.log_softmax(5 * mixed[:, 0, :2] + self.tilt(lengths), dim=-1)  # (R, 2)
        return log_p.gather(1, classes), alpha.expand(-1, classes.shape[1], -1)


def by_hand(n: int, orders) -> tuple[float, float, float]:
    """(share of orders that change the answer, mean |Δp(ŷ)| over them, |Δp(ŷ)| with uniform weights)."""
    alpha = np.arange(n, 0, -1) / (n * (n + 1) / 2)

    def p(weights):
        e = np.exp(5 * weights[:2])
        return e / e.sum()

    top = int(p(alpha).argmax())
    moved = [p(alpha[o]) for o in orders]
    return (np.mean([m.argmax() != top for m in moved]), np.mean([abs(m[top] - p(alpha)[top]) for m in moved]),
            abs(p(np.full(n, 1 / n))[top] - p(alpha)[top]))


def emails_task(lengths):
    from seqviz.text import Vocab

    words = [[f"w{i}" for i in range(n)] for n in lengths]
    return types.SimpleNamespace(vocab=Vocab.build(words), splits=types.SimpleNamespace(
        test=[types.SimpleNamespace(tokens=tuple(w)) for w in words]))


def test_the_permutation_test_by_hand():
    task = emails_task([2, 3, 5])
    result = explain.permutation_test(Pointer(), task, limit=None, permutations=4, seed=9)
    hand = [by_hand(len(e.tokens), explain.email_permutations(task.vocab.encode(list(e.tokens)), 4, 9))
            for e in task.splits.test]
    changed, moved, uniform = (np.array(column) for column in zip(*hand, strict=True))
    assert (result.emails, result.permutations, result.seed) == (3, 4, 9)
    assert result.per_email_changed.tolist() == changed.tolist()
    assert result.per_email_difference == pytest.approx(moved) and result.uniform_difference == pytest.approx(uniform)
    assert result.changed_any == np.mean(changed > 0) and result.changed_most == np.mean(changed > 0.5)
    assert 0 < result.changed_any < 1 or 0 < result.changed_most < 1
    assert result.mean_difference == pytest.approx(moved.mean())
    assert result.p90_difference == pytest.approx(np.quantile(moved, 0.9))
    assert result.uniform_changed == 0.0  # uniform weights: both classes tie, argmax keeps the first (ŷ = first)
    assert result.uniform_mean_difference == pytest.approx(uniform.mean())
    assert result.uniform_p90_difference == pytest.approx(np.quantile(uniform, 0.9))
    assert result.max_attention.tolist() == pytest.approx([2 / 3, 3 / 6, 5 / 15])


def test_the_permutation_tests_defaults_and_refusals():
    task = emails_task([2, 3] * 101)  # 202 emails: the default limit takes 200
    result = explain.permutation_test(Pointer(), task)
    assert (result.emails, result.permutations, result.seed) == (200, 100, 0)
    assert explain.permutation_test(Pointer(), task, limit=None, permutations=1).per_email_changed.shape == (202,)
    with refuses("at least one permutation"):
        explain.permutation_test(Pointer(), task, permutations=0)

    class Plain(Pointer):
        has_attention = False

    with refuses("the permutation test replaces attention weights, and a Plain has none"):
        explain.permutation_test(Plain(), task)
    with refuses("the permutation test replaces attention weights, and a object has none"):
        explain.permutation_test(object(), task)



def test_tau_rows_are_independent_and_top1_is_not_top2():
    assert explain.kendall_tau_rows([[1, 2, 3], [1, np.nan, 3]], [[1, 2, 3], [1, 2, 3]]) == [1.0, None]
    result = explain.agreement([[4, 3, 2, 1]], [[3, 4, 2, 1]])  # the same two words first, in another order
    assert result.top1 == [False] and result.top3 == [True]


def test_uniform_weights_keep_the_weights_dtype_and_permuted_ones_default_to_seed_0():
    weights = torch.full((1, 1, 3), 1 / 3, dtype=torch.float64)
    assert explain.uniform_weights(weights, torch.ones(1, 1, 3, dtype=torch.bool)).dtype == torch.float64
    src, lengths = torch.tensor([[7, 8, 9, 6]]), torch.tensor([4])
    moving = torch.arange(4, dtype=torch.float64).view(1, 1, 4)
    assert torch.equal(explain.ablation_mix("permuted", src, lengths)(moving, None),
                       explain.permutation_mix(src, lengths, 0)(moving, None))
    assert not torch.equal(explain.ablation_mix("permuted", src, lengths, seed=1)(moving, None),
                           explain.permutation_mix(src, lengths, 0)(moving, None))


def test_an_email_no_permutation_moves_counts_as_unchanged():
    task = emails_task([2, 3, 4])
    ids = [task.vocab.encode(list(e.tokens)) for e in task.splits.test]
    # the first seed whose one draw leaves the 2-word email in its order (its answer unchanged) and swaps the
    # 3-word one's first two words (its answer changes: α_1 > α_0 after it)
    seed = next(s for s in range(100) if explain.email_permutations(ids[0], 1, s).tolist() == [[0, 1]]
                and np.diff(explain.email_permutations(ids[1], 1, s)[0, :2])[0] < 0)  # its 2nd word now first
    result = explain.permutation_test(Pointer(), task, limit=None, permutations=1, seed=seed)
    assert result.per_email_changed[0] == 0.0 and result.per_email_changed.max() == 1.0
    share = np.mean(result.per_email_changed > 0)
    assert result.changed_any == result.changed_most == share < 1


def test_uniform_weights_that_change_one_emails_answer_and_not_anothers():
    """A 2-word email leans to the second class by 1: its own α (2/3, 1/3) still answers the first, uniform weights
    the second; a 3-word email's uniform weights tie, and the tie answers the first, as its own α does."""

    class Tilted(Pointer):
        def tilt(self, lengths):
            return torch.tensor([[0.0, 1.0 if n == 2 else 0.0] for n in lengths.tolist()], dtype=torch.float64)

    result = explain.permutation_test(Tilted(), emails_task([2, 3]), limit=None, permutations=1)
    assert result.uniform_changed == 0.5
