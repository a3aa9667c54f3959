"""Gradients through time, measured by autograd on real models.

Two measurements for the chapter's "why plain RNNs forget":

1. Saliency: for one sentence, the size of the gradient of the predicted class's score with respect to
   the word vector at each position, ‖∂score/∂x_t‖. A word whose gradient is tiny cannot change the
   decision, so the model cannot learn from it.

2. The Jacobian of the memory: on long random sequences, ‖∂h_T/∂h_k‖ (spectral norm) against the
   distance T − k. Backpropagation through time multiplies one Jacobian per step,

       ∂h_T/∂h_k = Π_{t=k+1..T} ∂h_t/∂h_{t-1},

   and for the plain RNN, h_t = tanh(W_h h_{t-1} + W_x x_t + b), each factor is diag(1 − h_t²) W_h, so
   (Pascanu et al. 2013) ‖∂h_T/∂h_k‖ ≤ η^{T−k} with η = γ · σ_max(W_h), γ = 1 for tanh.
   η < 1 is sufficient for the gradient to vanish; η > 1 is necessary (not sufficient) for it to explode.
   For the LSTM, h_k is nudged with the cell state c_k held fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class Saliency:
    tokens: list[str]
    predicted: str
    norms: np.ndarray  # (T,) ‖∂score/∂x_t‖ for t = 1 .. T


def saliency(model, tokens: list[str], vocab) -> Saliency:
    """‖∂ score of the predicted class / ∂ x_t‖ at every position t, by autograd on the real model."""
    ids = vocab.encode(list(tokens))
    if not ids:
        raise ValueError("The sentence has no words to read.")
    seen = vocab.decode(ids)
    with torch.enable_grad():
        ids_t = torch.tensor([ids])  # (1, T)
        emb = model.embed(ids_t).detach().requires_grad_(True)  # (1, T, E)
        logits = model.forward_from_embeddings(emb, torch.tensor([len(ids)]))  # (1, C)
        predicted = int(logits[0].argmax())
        logits[0, predicted].backward()
    norms = emb.grad[0].norm(dim=-1).numpy().copy()  # (T,)
    return Saliency(seen, model.labels[predicted], norms)


@dataclass(frozen=True)
class JacobianCurve:
    """Mean over samples of ‖∂h_T/∂h_k‖ for k = T-1 .. 0 (distance 1 .. T)."""

    cell: str
    distance: np.ndarray  # (D,) T − k
    norm: np.ndarray  # (D,) geometric mean over samples of the spectral norm
    eta: float | None  # Pascanu et al.'s η = σ_max(W_h) (plain RNN only)


def _cell_for(rnn: nn.RNNBase, scale: float) -> nn.Module:
    """A one-step cell with the layer's own weights, W_h multiplied by ``scale``."""
    kind = {nn.RNN: nn.RNNCell, nn.GRU: nn.GRUCell, nn.LSTM: nn.LSTMCell}[type(rnn)]
    cell = kind(rnn.input_size, rnn.hidden_size)
    with torch.no_grad():
        cell.weight_ih.copy_(rnn.weight_ih_l0)
        cell.weight_hh.copy_(rnn.weight_hh_l0 * scale)
        cell.bias_ih.copy_(rnn.bias_ih_l0)
        cell.bias_hh.copy_(rnn.bias_hh_l0)
    return cell.double().eval()  # float64: the norms reach 1e-100 and below


def jacobian_curve(model, length: int = 200, samples: int = 4, scale: float = 1.0, seed: int = 0) -> JacobianCurve:
    """‖∂h_T/∂h_k‖ against T − k for a recurrent classifier on random word sequences of ``length`` words.

    Each sample is repeated H times in the batch and row i of the output is seeded with unit vector e_i,
    so one backward pass gives the whole H x H Jacobian for every k at once. The model is read only
    through its public surface: ``recurrent_layer``, ``vocab_size`` and ``embed``.
    """
    rnn: nn.RNNBase = model.recurrent_layer
    cell = _cell_for(rnn, scale)
    hidden = rnn.hidden_size
    generator = torch.Generator().manual_seed(seed)
    vocab_size = model.vocab_size
    logs = []
    with torch.enable_grad():
        for _ in range(samples):
            ids = torch.randint(4, vocab_size, (length,), generator=generator)  # random real words
            x = model.embed(ids[None]).detach()[0].double()  # (T, E)
            x = x.expand(hidden, -1, -1)  # (H, T, E): one copy per output unit
            h = torch.zeros(hidden, hidden, dtype=torch.float64)  # (H batch, H units)
            c = torch.zeros_like(h)
            nudges = []
            for t in range(length):
                nudge = torch.zeros_like(h, requires_grad=True)  # δ_t: ∂h_T/∂δ_t = ∂h_T/∂h_t
                nudges.append(nudge)
                h = h + nudge
                if isinstance(cell, nn.LSTMCell):
                    h, c = cell(x[:, t], (h, c))
                else:
                    h = cell(x[:, t], h)
            # Row i of the batch backpropagates e_i: gradient rows are the rows of the Jacobian.
            (h * torch.eye(hidden, dtype=h.dtype)).sum().backward()
            # nudge t sits before step t+1: its Jacobian is ∂h_T/∂h_t, distance T − t.
            jac = torch.stack([n.grad for n in nudges[1:]])  # (T-1, H, H), t = 1 .. T-1
            norms = torch.linalg.matrix_norm(jac, ord=2)  # (T-1,)
            logs.append(torch.log(norms.clamp_min(1e-300)).numpy())
    mean_log = np.mean(logs, axis=0)[::-1]  # distance 1 .. T-1
    eta = None
    if isinstance(rnn, nn.RNN):
        eta = float(torch.linalg.matrix_norm(rnn.weight_hh_l0.detach() * scale, ord=2))
    return JacobianCurve(cell=type(rnn).__name__.lower(), distance=np.arange(1, length),
                         norm=np.exp(mean_log), eta=eta)
