"""seqviz.analysis.gates.forget_summary: what /lstm-gates says about forgetting, from the trace's own numbers."""

import numpy as np

from seqviz.analysis.gates import forget_summary
from seqviz.traces import LSTMGateTrace


def _trace(forget: np.ndarray, tokens: list[str]) -> LSTMGateTrace:
    zeros = np.zeros_like(forget)
    return LSTMGateTrace(tokens=tokens, input_gate=zeros, forget_gate=forget, output_gate=zeros, candidate=zeros,
                         cell=zeros, hidden=zeros)


def test_the_first_word_is_never_where_units_forget_most():
    """c₀ is zero: f₁ multiplies nothing. The lowest mean forget gate after the first word is named."""
    forget = np.array([[0.0, 0.0], [0.9, 0.7], [0.3, 0.5], [0.95, 0.99]])  # word 1 lowest, then word 3
    text = forget_summary(_trace(forget, ["my", "parcel", "never", "came"]))
    assert "“never” (position 3, mean f = 0.40)" in text
    assert "“my”" not in text


def test_one_word_has_nothing_to_forget():
    text = forget_summary(_trace(np.array([[0.2, 0.4]]), ["hello"]))
    assert "no earlier memory to forget" in text
    assert "0% of the time" in text  # the overall shares are still given
