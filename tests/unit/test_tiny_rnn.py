import numpy as np
import pytest

from seqviz.analysis import tiny_rnn
from seqviz.limits import TINY_RNN_MAX_STEPS


def test_chapter_row_to_three_decimals():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(6), w=0.5, activation="tanh")
    assert [f"{h:.3f}" for h in run.hidden] == ["0.762", "0.363", "0.180", "0.090", "0.045", "0.022"]


def test_chapter_gradient_figure():
    assert f"{tiny_rnn.CHAPTER_PRODUCT:.1e}" == "3.0e-09"


def test_backward_factors_are_w_times_tanh_slope():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(6), w=0.5)
    np.testing.assert_allclose(run.local_slope, 0.5 * (1 - run.hidden**2))
    # ∂h_T/∂h_{T-k}: the product of the last k factors
    np.testing.assert_allclose(run.gradient[2], np.prod(run.local_slope[-3:]))
    assert run.gradient[0] == pytest.approx(run.local_slope[-1])


def test_gradient_matches_finite_differences():
    x = [0.3, -0.2, 0.5, 0.1, 0.0]
    run = tiny_rnn.run_tiny_rnn(x, w=0.9)
    # Perturb h_2 by replaying the recurrence from step 3 with a nudged start: dh_5/dh_2 ≈ gradient[2].
    eps = 1e-6
    h2 = run.hidden[1]

    def h_last(h_start):
        return tiny_rnn.run_tiny_rnn(x[2:], w=0.9, h0=h_start).hidden[-1]

    numeric = (h_last(h2 + eps) - h_last(h2 - eps)) / (2 * eps)
    assert run.gradient[2] == pytest.approx(numeric, rel=1e-5)


def test_identity_above_one_explodes_exactly():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(30), w=1.5, activation="identity")
    np.testing.assert_allclose(run.gradient, 1.5 ** np.arange(1, 31))
    assert any("exploding" in line for line in tiny_rnn.describe_run(run))


def test_tanh_with_large_w_saturates_and_says_so():
    run = tiny_rnn.run_tiny_rnn([3.0] * 20, w=2.5, activation="tanh")
    assert run.saturated_steps > 10
    assert abs(run.gradient[-1]) < 1e-6
    assert any("saturated" in line for line in tiny_rnn.describe_run(run))


@pytest.mark.parametrize(("text", "steps", "values", "warns"), [
    ("1", 4, [1, 0, 0, 0], False),
    ("1, 0.5 -2", 3, [1, 0.5, -2], False),
    ("1 2 3 4", 2, [1, 2], True),
    ("", 3, [1, 0, 0], True),
    ("one, two", 3, [1, 0, 0], True),
    ("nan", 2, [1, 0], True),
    ("1e308", 2, [1, 0], True),
    ("<script>", 2, [1, 0], True),
])
def test_parse_inputs(text, steps, values, warns):
    parsed = tiny_rnn.parse_inputs(text, steps)
    assert parsed.values == values
    assert (parsed.problem is not None) == warns


def test_parse_inputs_bounds_steps():
    assert len(tiny_rnn.parse_inputs("1", 10_000).values) == TINY_RNN_MAX_STEPS
    with pytest.raises(ValueError):
        tiny_rnn.run_tiny_rnn([0.0] * (TINY_RNN_MAX_STEPS + 1))


def test_self_test_answer_quotes_live_ratios():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(6))
    answer = tiny_rnn.self_test_answer(run)
    assert "0.477" in answer  # 0.363 / 0.762
    assert "about half" in answer and "Your settings differ" not in answer


def test_self_test_answer_on_other_settings_quotes_that_run_too():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(10), w=2.0)
    answer = tiny_rnn.self_test_answer(run)
    assert "0.477" in answer  # still explains the chapter's run
    assert "Your settings differ (w = 2" in answer
    assert f"{run.hidden[1] / run.hidden[0]:.3f}" in answer


def test_mean_factor_is_the_geometric_mean_of_the_slopes():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(25))
    assert tiny_rnn.mean_factor(run, 20) == pytest.approx(np.prod(np.abs(run.local_slope[-20:])) ** (1 / 20))
    assert 0.45 < tiny_rnn.mean_factor(run, 20) <= 0.5  # the memory has faded: 1 - h² ≈ 1


@pytest.mark.parametrize(("w", "activation", "says"), [
    (0.5, "tanh", "faded towards 0"),
    (2.0, "tanh", "near ±1"),
    (0.9, "identity", "exactly w = 0.9"),
])
def test_why_the_factors_differ_follows_the_run(w, activation, says):
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(30), w=w, activation=activation)
    assert says in tiny_rnn.why_factors_differ(run, 20)
