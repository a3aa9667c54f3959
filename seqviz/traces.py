"""What models and analyses hand to charts: plain dataclasses of numpy arrays.

A trace is computed once per (model, sentence), holds no torch tensors (they are
detached and converted with ``.numpy()``), and is safe to cache and share
between sessions. Shapes use T for source/sentence length, U for output length,
H for hidden units, L for layers and N for heads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ClassifierTrace:
    """A classifier's reading of one sentence."""

    tokens: list[str]  # the words as the model saw them, "<unk>" kept visible
    labels: tuple[str, ...]  # class names, in the order of ``probs``
    probs: np.ndarray  # (C,) softmax probabilities
    hidden: np.ndarray | None = None  # (T, H) hidden state after each word (recurrent models)

    @property
    def predicted(self) -> str:
        return self.labels[int(np.argmax(self.probs))]


@dataclass(frozen=True)
class PooledAttentionTrace:
    """An attention-pooling classifier's reading of one sentence: one weight per word, and the decision.

    u_j = vᵀ tanh(W h_j + b)     a score for every word's state h_j
    α = softmax(u)               weights over the words that add to 1
    c = Σ_j α_j h_j              the one vector the team is read from: p = softmax(W_o c + b_o)

    ``weights`` are the α the probabilities were computed with: the model's own, or the ones a caller put in
    their place (``replaced`` True: uniform, permuted...), in which case ``scores`` are still the model's.
    """

    tokens: list[str]  # the words as the model saw them, "<unk>" kept visible
    labels: tuple[str, ...]  # class names, in the order of ``probs``
    scores: np.ndarray  # (T,) u_j
    weights: np.ndarray  # (T,) α_j, adding to 1
    probs: np.ndarray  # (C,) softmax probabilities computed with ``weights``
    replaced: bool = False  # True: ``weights`` were passed in, not the model's softmax(u)

    @property
    def predicted(self) -> str:
        return self.labels[int(np.argmax(self.probs))]


@dataclass(frozen=True)
class LSTMGateTrace:
    """Per word and per unit, the LSTM's gates, replayed from ``nn.LSTM``'s own weights.

    i_t = σ(W_ii x_t + W_hi h_{t-1} + b_i)     input gate
    f_t = σ(W_if x_t + W_hf h_{t-1} + b_f)     forget gate
    g_t = tanh(W_ig x_t + W_hg h_{t-1} + b_g)  candidate c̃_t
    o_t = σ(W_io x_t + W_ho h_{t-1} + b_o)     output gate
    c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t
    h_t = o_t ⊙ tanh(c_t)
    """

    tokens: list[str]
    input_gate: np.ndarray  # (T, H)
    forget_gate: np.ndarray  # (T, H)
    output_gate: np.ndarray  # (T, H)
    candidate: np.ndarray  # (T, H)
    cell: np.ndarray  # (T, H)
    hidden: np.ndarray  # (T, H)


@dataclass(frozen=True)
class SelfAttentionTrace:
    """Self-attention weights of a transformer encoder, every layer and head."""

    tokens: list[str]
    weights: np.ndarray  # (L, N, T, T): row = the word attending, column = the word attended to


@dataclass(frozen=True)
class AttentionStep:
    """One decoder step of an LSTM translator's attention, read as the chapter's three steps.

    (1) score every encoder state h_j with the query: additive (Bahdanau et al. 2014)
        score_j = vᵀ tanh(W s_{t-1} + U h_j), asked with s_{t-1} before the step; dot (Luong et al. 2015)
        score_j = s_t · (W_a h_j), asked with s_t after it
    (2) α_j = softmax(score)_j: weights that add to 1
    (3) context = Σ_j α_j h_j: a weighted average of encoder states
    """

    output_token: str  # the word this step produced
    query: np.ndarray  # (H,) the decoder state that asks "what am I looking for"
    scores: np.ndarray  # (T,)
    weights: np.ndarray  # (T,)
    context: np.ndarray  # (2H,) or (H,): the context vector built at this step
    query_name: str = "s_{t-1}"  # which decoder state the query is: "s_{t-1}" (additive) or "s_t" (dot)


@dataclass(frozen=True)
class TranslationTrace:
    """An LSTM translator's greedy output for one source sentence."""

    src_tokens: list[str]  # "<unk>" kept visible
    out_tokens: list[str]  # without <bos>/<eos>
    alignment: np.ndarray | None  # (U, T) attention weights; None for the plain (no attention) model
    steps: list[AttentionStep] = field(default_factory=list)  # one per output word; empty for plain
    score_rule: str | None = None  # the score in the chapter's notation, e.g. "score_j = s_t · (W_a h_j)"


@dataclass(frozen=True)
class TransformerTranslationTrace:
    """A transformer translator's output with every attention map."""

    src_tokens: list[str]
    out_tokens: list[str]
    encoder_self: np.ndarray  # (L, N, T, T)
    decoder_self: np.ndarray  # (L, N, U, U)
    cross: np.ndarray  # (L, N, U, T)

    @property
    def alignment(self) -> np.ndarray:
        """Cross-attention of the last layer averaged over heads: (U, T)."""
        return self.cross[-1].mean(axis=0)
