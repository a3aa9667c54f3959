"""Integrated gradients' budget at its edges (seqviz.analysis.explain.importance, seqviz.limits.IG_PATH_POINTS and
IG_MIN_POINTS): how many points along the path each round takes, for rows x words just inside and just past the
budget. Captum's method is stood in for by one that records its rounds and never meets completeness, so every round
the budget allows is taken (the real attributions: test_explain_attributions.py)."""

from __future__ import annotations

import torch

from seqviz import limits
from seqviz.analysis.explain import importance


class Recording:
    """A stand-in for captum's IntegratedGradients: records n_steps and rows, answers zeros with a gap of 1 nat."""

    def __init__(self):
        self.rounds: list[tuple[int, int]] = []  # (rows, points)

    def attribute(self, inputs, baselines, target, n_steps, additional_forward_args, internal_batch_size,
                  return_convergence_delta):
        assert return_convergence_delta and len(target) == inputs.shape[0]
        self.rounds.append((inputs.shape[0], n_steps))
        return torch.zeros_like(inputs), torch.ones(inputs.shape[0], dtype=inputs.dtype)


def rounds(rows: int, words: int) -> list[tuple[int, int]]:
    method = Recording()
    per_word, gap = importance._integrated_gradients(method, torch.zeros(rows, words, 1), list(range(rows)), ())
    assert per_word.shape == (rows, words) and gap.shape == (rows,)
    return method.rounds


def test_a_further_round_is_taken_while_it_stays_within_ig_path_points_and_not_one_word_past():
    first, second, _ = importance.IG_STEPS
    exact = limits.IG_PATH_POINTS // (2 * second)
    assert 2 * exact * second == limits.IG_PATH_POINTS  # 2 rows x exact words x the second round's points: the budget
    assert rounds(2, exact) == [(2, first), (2, second)]  # exactly at the budget: taken
    assert rounds(2, exact + 1) == [(2, first)]  # one word more: past it, the first round's gaps stay


def test_the_first_round_takes_fewer_points_past_the_budget_but_never_fewer_than_ig_min_points():
    first = importance.IG_STEPS[0]
    full = limits.IG_PATH_POINTS // first  # rows x words that still get the first round's points
    assert rounds(1, full)[0] == (1, first)
    assert rounds(1, full + 1)[0] == (1, limits.IG_PATH_POINTS // (full + 1))  # one word more: fewer points
    assert limits.IG_PATH_POINTS // (full + 1) == first - 1
    floor = limits.IG_PATH_POINTS // limits.IG_MIN_POINTS  # the most words that get IG_MIN_POINTS by the budget
    assert rounds(1, floor) == [(1, limits.IG_MIN_POINTS)]
    assert rounds(1, floor + 1) == [(1, limits.IG_MIN_POINTS)]  # past it: still IG_MIN_POINTS, never fewer
    assert limits.IG_PATH_POINTS // (floor + 1) < limits.IG_MIN_POINTS
