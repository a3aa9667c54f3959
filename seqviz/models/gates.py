"""An LSTM's gates, replayed step by step from ``nn.LSTM``'s own weights (every model with an LSTM uses it).

``nn.LSTM`` runs in one fused kernel and returns only h_t (and the last c_t); the gates live inside it.
:func:`replay_lstm` recomputes them with the same weights, one step at a time, so a page can show what
each gate did at each word. A parity test checks the replay against ``nn.LSTM`` to 1e-5.
"""

from __future__ import annotations

import torch
from torch import nn

from seqviz.traces import LSTMGateTrace


def lstm_gate_trace(lstm: nn.LSTM, inputs: torch.Tensor, tokens: list[str], reverse: bool = False) -> LSTMGateTrace:
    """Replay the first layer of ``lstm`` on one sequence ``inputs`` (T, E), with its own weights.

    Any ``nn.LSTM`` works (a classifier's, or a translator's encoder); ``reverse=True`` replays the backward
    direction of a bidirectional layer (its arrays are still in reading order, left to right).
    """
    suffix = "_reverse" if reverse else ""
    w_ih = getattr(lstm, f"weight_ih_l0{suffix}")  # (4H, E), gate order i, f, g, o
    w_hh = getattr(lstm, f"weight_hh_l0{suffix}")  # (4H, H)
    if lstm.bias:
        bias = getattr(lstm, f"bias_ih_l0{suffix}") + getattr(lstm, f"bias_hh_l0{suffix}")  # (4H,)
    else:
        bias = torch.zeros(w_ih.shape[0], dtype=w_ih.dtype)
    if getattr(lstm, "proj_size", 0):
        raise ValueError("LSTMs with projections are not replayed")
    with torch.inference_mode():
        steps = replay_lstm(w_ih, w_hh, bias, inputs.flip(0) if reverse else inputs)
        if reverse:
            steps = {name: values.flip(0) for name, values in steps.items()}
    arrays = {name: values.numpy().copy() for name, values in steps.items()}
    return LSTMGateTrace(
        tokens=list(tokens),
        input_gate=arrays["input_gate"],
        forget_gate=arrays["forget_gate"],
        output_gate=arrays["output_gate"],
        candidate=arrays["candidate"],
        cell=arrays["cell"],
        hidden=arrays["hidden"],
    )


def replay_lstm(
    w_ih: torch.Tensor, w_hh: torch.Tensor, bias: torch.Tensor, inputs: torch.Tensor
) -> dict[str, torch.Tensor]:
    """One LSTM layer, one step at a time, from h_0 = c_0 = 0; every returned tensor is (T, H).

    i_t = σ(W_ii x_t + W_hi h_{t-1} + b_i)      f_t = σ(W_if x_t + W_hf h_{t-1} + b_f)
    c̃_t = tanh(W_ig x_t + W_hg h_{t-1} + b_g)   o_t = σ(W_io x_t + W_ho h_{t-1} + b_o)
    c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t             h_t = o_t ⊙ tanh(c_t)
    """
    hidden_size = w_hh.shape[1]
    h = inputs.new_zeros(hidden_size)  # (H,)
    c = inputs.new_zeros(hidden_size)  # (H,)
    names = ("input_gate", "forget_gate", "candidate", "output_gate", "cell", "hidden")
    rows: dict[str, list[torch.Tensor]] = {name: [] for name in names}
    for x_t in inputs:  # (E,)
        z = w_ih @ x_t + w_hh @ h + bias  # (4H,)
        i_t, f_t, g_t, o_t = z.chunk(4)  # each (H,)
        i_t, f_t, g_t, o_t = torch.sigmoid(i_t), torch.sigmoid(f_t), torch.tanh(g_t), torch.sigmoid(o_t)
        c = f_t * c + i_t * g_t
        h = o_t * torch.tanh(c)
        for name, value in zip(names, (i_t, f_t, g_t, o_t, c, h), strict=True):
            rows[name].append(value)
    return {name: torch.stack(values) for name, values in rows.items()}  # each (T, H)
