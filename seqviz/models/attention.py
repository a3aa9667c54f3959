"""Attention, as one part: every model in seqviz that attends uses these modules.

The chapter's three steps, for a query q and keys k_j with values v_j:

    (1) score_j = q · k_j            how well word j answers the question q
    (2) α = softmax(score)           weights that add to 1 (padding gets exactly 0)
    (3) context = Σ_j α_j v_j        a weighted average of the values

- :func:`attention` is the transformer's scaled dot-product form, softmax(Q Kᵀ / √d_k) V, and
  :class:`MultiHeadAttention` runs it in N heads (the transformer classifier and translator use both).
- :class:`AdditiveAttention` (Bahdanau et al. 2014) and :class:`GeneralAttention` (Luong et al. 2015)
  are the LSTM decoder's attention parts; :class:`NoAttention` is the bottleneck's: the decoder sees only
  the encoder's final memory z. The three share one interface (:class:`DecoderAttention`), so the LSTM
  decoder (seqviz.models.seq2seq) is the same code whichever part it is given.

Masks follow one convention everywhere: True = may look.

A translator's attention may be given a *mix* for one call (:data:`Mix`, seqviz.analysis.explain's ablations):
a function that takes the weights α after step (2) and the mask and returns the weights step (3) uses instead.
It is an argument, never kept on a module (models are cached and shared); None, the default, leaves every
number as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

Mix = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``mix(weights, mask) -> weights``: weights (..., Tq, Tk) whose rows add to 1 over the real source words, mask
broadcastable to them (True on real words); returns weights of the same shape that step (3) mixes the values with."""


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """softmax over the last axis where ``mask`` is True (broadcast); exactly 0 where it is False."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
    mix: Mix | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention, softmax(Q Kᵀ / √d_k) V; returns ``(output, p_attn)``.

    q (B, N, Tq, d_k), k and v (B, N, Tk, d_k); ``mask`` broadcastable to (B, N, Tq, Tk), True = may look.
    p_attn (B, N, Tq, Tk) is exactly 0 where the mask is False; ``dropout`` (training only) acts on the
    weights that mix the values, never on the returned p_attn. ``mix`` (:data:`Mix`, this call only) replaces
    the weights before they mix the values; p_attn is then the weights it returned.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, N, Tq, Tk)
    p_attn = masked_softmax(scores, mask)  # (B, N, Tq, Tk): each row adds to 1
    if mix is not None:
        p_attn = mix(p_attn, mask)  # (B, N, Tq, Tk)
    mixing = dropout(p_attn) if dropout is not None else p_attn
    return mixing @ v, p_attn  # (B, N, Tq, d_k), (B, N, Tq, Tk)


class MultiHeadAttention(nn.Module):
    """Q = x W_Q, K = m W_K, V = m W_V split into N heads, each attends, heads concatenated and mixed by W_O.

    ``memory`` None is self-attention (m = x); the translator's cross-attention passes the encoder's output.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor | None = None, mask: torch.Tensor | None = None,
        mix: Mix | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, Tq, d) asks, memory (B, Tk, d) answers -> output (B, Tq, d), weights (B, N, Tq, Tk).

        ``mix``: see :func:`attention` (this call only)."""
        memory = x if memory is None else memory
        B, Tq, d = x.shape
        Tk, N = memory.size(1), self.n_heads
        q = self.q(x).view(B, Tq, N, d // N).transpose(1, 2)  # (B, N, Tq, d_k)
        k = self.k(memory).view(B, Tk, N, d // N).transpose(1, 2)  # (B, N, Tk, d_k)
        v = self.v(memory).view(B, Tk, N, d // N).transpose(1, 2)  # (B, N, Tk, d_k)
        out, p_attn = attention(q, k, v, mask, self.dropout, mix)  # (B, N, Tq, d_k), (B, N, Tq, Tk)
        out = out.transpose(1, 2).reshape(B, Tq, d)  # (B, Tq, d): heads side by side
        return self.o(out), p_attn


# ---------------------------------------------------------------------------------------------------------
# The LSTM decoder's attention parts


@dataclass
class EncoderMemory:
    """What an LSTM decoder may read of one batch of source sentences (per call; never kept on a module)."""

    states: torch.Tensor  # (B, T, D) encoder states h_j, zeros on padding
    final: torch.Tensor  # (B, D) the encoder's final memory z = [→h_T; ←h_1]
    mask: torch.Tensor  # (B, T) True on real source words
    keys: torch.Tensor | None = None  # what the part precomputed once per sentence (U h_j, W_a h_j, ...)
    mix: Mix | None = None  # replaces α after the softmax, for this call only (None: the part's own weights)


class DecoderAttention(nn.Module):
    """The interface of an LSTM decoder's attention part.

    ``before_step`` True: the part is asked with s_{t-1} before the decoder's LSTM step and its context
    c_t is fed into that step (Bahdanau; the bottleneck feeds z the same way). False: it is asked with s_t
    after the step, and c_t only reaches the output (Luong), so teacher forcing runs every step at once.
    ``fixed_context`` True: the context does not depend on the query (the bottleneck's z).
    ``one_way_encoder`` True: the part compares s_t (H,) with h_j directly, so the encoder must read one way
    (h_j is then (H,) too); a run trained in the app then builds a one-way encoder.

    A part is built from the translator's config (:meth:`from_config`) and may refuse one it cannot work with
    (:meth:`check`). Its ``score_rule`` is the score in the chapter's notation, written once: traces carry it
    and charts print it.
    """

    before_step: ClassVar[bool] = True
    fixed_context: ClassVar[bool] = False
    one_way_encoder: ClassVar[bool] = False
    score_rule: ClassVar[str | None] = None  # the score, in the chapter's notation (None: no scores)

    @classmethod
    def check(cls, config) -> None:
        """Raise ValueError for a seqviz.models.seq2seq.Seq2SeqConfig this part cannot work with."""
        if cls.one_way_encoder and config.bidirectional:
            raise ValueError(f"the {config.kind} attention compares s_t (H,) with h_j (2H,): use a one-way encoder "
                             "(bidirectional False)")

    @classmethod
    def from_config(cls, config) -> DecoderAttention:
        """The part for a translator of this config: queries s (H,) = config.hidden, keys h_j (D,) =
        config.encoder_dim."""
        raise NotImplementedError

    def prepare(self, memory: EncoderMemory) -> EncoderMemory:
        """Precompute the keys once per sentence; returns ``memory`` with ``keys`` set."""
        return memory

    @staticmethod
    def weigh(scores: torch.Tensor, memory: EncoderMemory) -> torch.Tensor:
        """Step (2): α = softmax(score) (B, U, T) over the real source words, then ``memory.mix`` if it has one."""
        mask = memory.mask[:, None, :]  # (B, 1, T)
        weights = masked_softmax(scores, mask)  # (B, U, T)
        return weights if memory.mix is None else memory.mix(weights, mask)

    def forward(
        self, query: torch.Tensor, memory: EncoderMemory
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """query (B, U, H): U decoder states -> context (B, U, D), weights (B, U, T), scores (B, U, T)."""
        raise NotImplementedError


class NoAttention(DecoderAttention):
    """The bottleneck (Sutskever et al. 2014; Cho et al. 2014): c_t = z at every step, no scores, no weights."""

    fixed_context = True

    @classmethod
    def from_config(cls, config):
        return cls()

    def forward(self, query, memory):
        B, U = query.shape[:2]
        return memory.final[:, None, :].expand(B, U, -1), None, None  # (B, U, D)


class AdditiveAttention(DecoderAttention):
    """Bahdanau et al. 2014: score_j = vᵀ tanh(W s_{t-1} + U h_j); α = softmax(score); c_t = Σ_j α_j h_j."""

    score_rule = "score_j = vᵀ tanh(W s_{t-1} + U h_j)"

    @classmethod
    def from_config(cls, config):
        return cls(config.hidden, config.encoder_dim, config.attn_dim)

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int) -> None:
        super().__init__()
        self.W = nn.Linear(query_dim, attn_dim, bias=False)
        self.U = nn.Linear(key_dim, attn_dim, bias=True)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def prepare(self, memory):
        memory.keys = self.U(memory.states)  # (B, T, A): U h_j, once per sentence
        return memory

    def forward(self, query, memory):
        hidden = torch.tanh(self.W(query)[:, :, None, :] + memory.keys[:, None, :, :])  # (B, U, T, A)
        scores = self.v(hidden).squeeze(-1)  # (B, U, T)
        weights = self.weigh(scores, memory)  # (B, U, T)
        return weights @ memory.states, weights, scores  # context (B, U, D)


class GeneralAttention(DecoderAttention):
    """Luong et al. 2015, after the step: score_j = s_t · (W_a h_j) ("general") or s_t · h_j ("dot")."""

    before_step = False

    def __init__(self, query_dim: int, key_dim: int, general: bool = True) -> None:
        super().__init__()
        if not general and query_dim != key_dim:
            raise ValueError(f"s_t · h_j needs s_t ({query_dim}) and h_j ({key_dim}) of one size")
        self.W_a = nn.Linear(key_dim, query_dim, bias=False) if general else None

    @classmethod
    def check(cls, config) -> None:
        if config.dot_score not in ("general", "dot"):
            raise ValueError(f"dot_score must be 'general' or 'dot', not {config.dot_score!r}")
        if config.dot_score == "dot" and config.bidirectional:
            raise ValueError("dot_score='dot' compares s_t (H,) with h_j (2H,): use a unidirectional encoder")

    @classmethod
    def from_config(cls, config):
        return cls(config.hidden, config.encoder_dim, general=config.dot_score == "general")

    @property
    def score_rule(self) -> str:  # type: ignore[override]
        return "score_j = s_t · (W_a h_j)" if self.W_a is not None else "score_j = s_t · h_j"

    def prepare(self, memory):
        memory.keys = self.W_a(memory.states) if self.W_a is not None else memory.states  # (B, T, H)
        return memory

    def forward(self, query, memory):
        scores = query @ memory.keys.transpose(1, 2)  # (B, U, T)
        weights = self.weigh(scores, memory)  # (B, U, T)
        return weights @ memory.states, weights, scores  # context (B, U, D)
