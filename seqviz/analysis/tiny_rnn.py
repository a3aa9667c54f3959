"""The chapter's tiniest RNN: a one-number memory, h_t = f(w · h_{t-1} + x_t).

Forward, the memory of an input fades (or grows) by the factor the recurrence
applies at each step. Backward, the gradient that reaches k steps back is the
product of the local slopes of the k steps in between:

    ∂h_T/∂h_{T-k} = Π_{j=T-k+1..T} w · f'(a_j),    a_j = w · h_{j-1} + x_j

For f = tanh, f'(a_j) = 1 - h_j², so each factor is at most |w|; for the
identity, f' = 1 and each factor is exactly w.
Pure numpy: the page that uses it paints without importing torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from seqviz.limits import TINY_RNN_INPUT_RANGE, TINY_RNN_MAX_INPUT_CHARS, TINY_RNN_MAX_STEPS

ACTIVATIONS = ("tanh", "identity")

# The chapter's figure for twenty steps back: each factor 0.5 × (1 - h²) with h² ≈ 0.25.
CHAPTER_FACTOR = 0.5 * 0.75
CHAPTER_STEPS_BACK = 20
CHAPTER_PRODUCT = CHAPTER_FACTOR**CHAPTER_STEPS_BACK  # ≈ 3.0e-9


@dataclass(frozen=True)
class TinyRNNRun:
    """One run of the recurrence, forward and backward."""

    w: float
    activation: str
    inputs: np.ndarray  # (T,) x_1 .. x_T
    hidden: np.ndarray  # (T,) h_1 .. h_T
    local_slope: np.ndarray  # (T,) w · f'(a_t) = ∂h_t/∂h_{t-1}
    gradient: np.ndarray  # (T,) entry k-1 is ∂h_T/∂h_{T-k}, k = 1 .. T steps back

    @property
    def steps(self) -> int:
        return len(self.hidden)

    @property
    def saturated_steps(self) -> int:
        """Steps where tanh is flat (|h| > 0.99): the slope there is near 0 whatever w is."""
        if self.activation != "tanh":
            return 0
        return int(np.sum(np.abs(self.hidden) > 0.99))


def activate(activation: str, a: np.ndarray | float) -> np.ndarray:
    if activation == "tanh":
        return np.tanh(a)
    if activation == "identity":
        return np.asarray(a, dtype=float)
    raise ValueError(f"unknown activation {activation!r}; choose one of {ACTIVATIONS}")


def run_tiny_rnn(inputs, w: float = 0.5, activation: str = "tanh", h0: float = 0.0) -> TinyRNNRun:
    """Run h_t = f(w · h_{t-1} + x_t) over ``inputs`` and differentiate it backwards through time."""
    x = np.asarray(inputs, dtype=float)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError("inputs must be a non-empty list of numbers")
    if len(x) > TINY_RNN_MAX_STEPS:
        raise ValueError(f"at most {TINY_RNN_MAX_STEPS} steps")
    hidden = np.empty_like(x)
    slope = np.empty_like(x)
    h = float(h0)
    with np.errstate(over="ignore", invalid="ignore"):
        for t, x_t in enumerate(x):
            a_t = w * h + x_t  # pre-activation
            h = float(activate(activation, a_t))
            hidden[t] = h
            # f'(a_t): 1 - tanh(a_t)² = 1 - h_t², or 1 for the identity
            slope[t] = w * (1.0 - h * h if activation == "tanh" else 1.0)
        # Going back from step T: the k-th entry multiplies the last k local slopes.
        gradient = np.cumprod(slope[::-1])
    return TinyRNNRun(w=float(w), activation=activation, inputs=x, hidden=hidden,
                      local_slope=slope, gradient=gradient)


def impulse(steps: int, first: float = 1.0) -> list[float]:
    """The chapter's input: a 1 followed by zeros."""
    return [first] + [0.0] * (steps - 1)


@dataclass(frozen=True)
class ParsedInputs:
    values: list[float]  # exactly ``steps`` numbers
    problem: str | None  # a sentence for the visitor when something was ignored or replaced


def parse_inputs(text: str, steps: int) -> ParsedInputs:
    """Read "1, 0, 0" (commas or spaces) into ``steps`` numbers; missing steps are 0.

    Anything that is not a finite number in range is reported and the chapter's
    input (1 then zeros) is used instead, so the page always has something to show.
    """
    steps = max(1, min(int(steps), TINY_RNN_MAX_STEPS))
    low, high = TINY_RNN_INPUT_RANGE
    text = (text or "")[:TINY_RNN_MAX_INPUT_CHARS]
    parts = [p for p in re.split(r"[,\s;]+", text.strip()) if p]
    if not parts:
        return ParsedInputs(impulse(steps), "No inputs were given, so the chapter's 1 followed by zeros is used.")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        bad = next(p for p in parts if not _is_number(p))
        return ParsedInputs(impulse(steps), f"“{bad[:20]}” is not a number, so the chapter's 1 followed by "
                                            "zeros is used. Type numbers separated by commas, like 1, 0, 0.")
    if not all(np.isfinite(n) and low <= n <= high for n in numbers):
        return ParsedInputs(impulse(steps), f"Each input must be a number from {low:g} to {high:g}, so the "
                                            "chapter's 1 followed by zeros is used.")
    problem = None
    if len(numbers) > steps:
        problem = f"{len(numbers) - steps} input(s) beyond step {steps} are not used: raise the number of steps."
    values = (numbers + [0.0] * steps)[:steps]
    return ParsedInputs(values, problem)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def fade_ratios(run: TinyRNNRun) -> np.ndarray:
    """h_t / h_{t-1} for t = 2 .. T (NaN where h_{t-1} = 0): how much of the memory each step keeps."""
    prev, cur = run.hidden[:-1], run.hidden[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(prev != 0, cur / prev, np.nan)


def describe_run(run: TinyRNNRun) -> list[str]:
    """What the numbers of this run show, in words (the page prints these)."""
    lines = []
    final = abs(run.gradient[-1])
    k = run.steps
    if run.activation == "identity":
        if abs(run.w) > 1:
            lines.append(f"With f the identity and |w| = {abs(run.w):g} > 1, every step back multiplies the "
                         f"gradient by exactly {run.w:g}: after {k} steps it is {run.gradient[-1]:.3g}. "
                         "That is an exploding gradient; training would take huge steps, which is why "
                         "RNNs are trained with gradient clipping (cap the gradient's length).")
        elif abs(run.w) < 1:
            lines.append(f"With f the identity, every step back multiplies the gradient by exactly {run.w:g}: "
                         f"after {k} steps only {final:.3g} of it is left. The gradient vanishes.")
        else:
            lines.append("With |w| = 1 and the identity, the gradient passes back unchanged: the knife's edge "
                         "between vanishing and exploding.")
    else:
        if run.saturated_steps:
            lines.append(f"tanh is saturated at {run.saturated_steps} step(s) (|hₜ| > 0.99): there its slope "
                         "1 − hₜ² is nearly 0, so however large w is, the gradient through those steps "
                         "almost stops. With tanh a big w does not make the gradient explode for long; the "
                         "memory pins at ±1 and the gradient still dies.")
        if final > 1:
            lines.append(f"Here the product over all {k} steps is {final:.3g} > 1: the gradient grows "
                         "going back, because |w| · (1 − hₜ²) stays above 1 at these steps.")
        else:
            lines.append(f"Each step back multiplies the gradient by w · (1 − hₜ²), at most |w| = "
                         f"{abs(run.w):g}. After {k} steps, {final:.3g} of it is left.")
    return lines


def is_chapter_setting(run: TinyRNNRun) -> bool:
    """w = 0.5, tanh, and a 1 followed by zeros: the chapter's own run."""
    x = run.inputs
    return run.activation == "tanh" and run.w == 0.5 and x[0] == 1.0 and not np.any(x[1:])


def self_test_answer(run: TinyRNNRun) -> str:
    """Why the first input fades by about half each step: from the chapter's run, computed live, and a
    word on the visitor's own run when its settings differ."""
    chapter = run if is_chapter_setting(run) else run_tiny_rnn(impulse(max(run.steps, 6)))
    shown = ", ".join(f"{r:.3f}" for r in fade_ratios(chapter)[:5])
    answer = (f"With no new input, hₜ = tanh(0.5 · hₜ₋₁). For small numbers tanh(a) ≈ a, so hₜ ≈ 0.5 · hₜ₋₁: "
              f"each step keeps about half of the memory. The ratios hₜ / hₜ₋₁ of the chapter's run are {shown}: "
              "the first is a little lower because tanh bends the larger value (tanh(1) = 0.762, not 1), and "
              "they approach 0.5 as the memory gets small.")
    if chapter is not run:
        ratios = [r for r in fade_ratios(run)[:5] if np.isfinite(r)]
        mine = ", ".join(f"{r:.3f}" for r in ratios) or "none (the memory is 0)"
        inputs = "" if np.array_equal(run.inputs, impulse(run.steps)) else ", your own inputs"
        answer += (f" Your settings differ (w = {run.w:g}, f = {run.activation}{inputs}), and your run's "
                   f"ratios are {mine}: the fade factor is w only where the input is 0 and f is close to the "
                   "identity.")
    return answer


def mean_factor(run: TinyRNNRun, steps_back: int) -> float:
    """Geometric mean of |w · f'| over the last ``steps_back`` steps: the typical factor per step back."""
    k = min(steps_back, run.steps)
    product = abs(run.gradient[k - 1])
    return product ** (1 / k) if product > 0 else 0.0


def why_factors_differ(run: TinyRNNRun, steps_back: int) -> str:
    """Why this run's typical factor differs from the chapter's 0.5 × 0.75, from where its memory sits."""
    typical = mean_factor(run, steps_back)
    h2 = float(np.mean(run.hidden[-steps_back:] ** 2))  # mean h² over those steps
    said = f"the factors average {typical:.3f} per step, against the chapter's 0.375 (0.75 is 1 − h² with h² ≈ 0.25). "
    if run.activation == "identity":
        return said + f"With f the identity there is no squashing: every factor is exactly w = {run.w:g}."
    if h2 < 0.05:
        return said + ("Here the memory has faded towards 0 (mean h² = " f"{h2:.3f}), so 1 − h² ≈ 1 and each factor "
                       f"is close to w = {run.w:g} itself.")
    if h2 > 0.5:
        return said + (f"Here the memory sits near ±1 (mean h² = {h2:.2f}), where tanh is flat: 1 − h² is small, "
                       "so each factor is far below w.")
    return said + f"Here the mean h² is {h2:.2f}, so each factor is w · (1 − h²) ≈ {run.w * (1 - h2):.3f}."
