"""Captum's Gauss-Legendre rule is kept between calls (seqviz.analysis.explain.importance): the same numbers as
numpy's own, bit for bit, read-only, and integrated gradients unchanged by it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from captum.attr import IntegratedGradients

from seqviz.analysis.explain import importance


def test_the_kept_rule_is_numpys_bit_for_bit_and_read_only():
    leggauss = np.polynomial.legendre.leggauss
    assert hasattr(leggauss, "cache_info"), "importance should keep the rule once imported"
    for n in (*importance.IG_STEPS, 7):
        points, weights = leggauss(n)
        fresh_points, fresh_weights = leggauss.__wrapped__(n)
        assert np.array_equal(points, fresh_points) and np.array_equal(weights, fresh_weights)
        assert leggauss(n)[0] is points  # kept, not made again
        with pytest.raises(ValueError):
            points[0] = 0.0
    importance._remember_gauss_legendre()  # a second import's call wraps nothing twice
    assert np.polynomial.legendre.leggauss is leggauss


def test_integrated_gradients_are_the_same_with_the_kept_rule():
    """Completeness on a smooth function: its attributions add up to f(x) − f(0) within the tolerance, and
    two calls (the second from the kept rule) agree exactly."""
    weights = torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64)

    def f(x):
        return torch.tanh(x @ weights.T).squeeze(-1) + (x ** 2).sum(-1)

    x = torch.tensor([[0.3, -0.7, 0.2]], dtype=torch.float64)
    ig = IntegratedGradients(f)
    first, delta = ig.attribute(x, baselines=0.0, n_steps=200, return_convergence_delta=True)
    second = ig.attribute(x, baselines=0.0, n_steps=200)
    assert torch.equal(first, second)
    assert abs(first.sum().item() - (f(x) - f(torch.zeros_like(x))).item()) < 1e-6
    assert abs(delta.item()) < 1e-6
