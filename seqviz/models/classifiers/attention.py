"""An LSTM email classifier that pools its states with attention (Jain & Wallace 2019's setting, for "is
attention an explanation?"). It reads the email both ways and classifies from one vector, a weighted average of
every word's state:

    u_j = vᵀ tanh(W h_j + b),   α = softmax(u),   c = Σ_j α_j h_j

Its weights α are returned by each call, and a call may put others in their place (uniform, or its own
permuted over the words) to ask whether the decision depends on them; ``replay_attention_pooling`` recomputes
every step from the module's own weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from seqviz.models.attention import Mix, masked_softmax
from seqviz.models.classifiers.base import ClassifierBase, as_long_tensor, real_words
from seqviz.models.common import check_sizes, one_sentence
from seqviz.models.gates import replay_lstm
from seqviz.traces import PooledAttentionTrace


@dataclass
class AttentionClassifierConfig:
    vocab_size: int = 64  # words known, the four specials included (set from the task's Vocab)
    labels: tuple[str, ...] = ("a", "b")  # class names, in the order of the output scores
    emb_dim: int = 32  # E: numbers per word vector x_j
    hidden_dim: int = 32  # H: numbers in each direction's memory (h_j has 2H when bidirectional)
    attn_dim: int = 64  # A: units of the score's hidden layer tanh(W h_j + b)
    bidirectional: bool = True  # h_j = [→h_j; ←h_j]: each word's state has read the whole email
    dropout: float = 0.0  # dropout on x_j and on the pooled vector c, during training only

    def __post_init__(self):
        self.labels = tuple(self.labels)
        check_sizes(self, vocab=("vocab_size",), labels=("labels",), width=("emb_dim", "hidden_dim", "attn_dim"))
        if not isinstance(self.bidirectional, bool):
            raise ValueError(f"bidirectional must be True or False, not {self.bidirectional!r:.40}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")

    @property
    def state_dim(self) -> int:
        """D: numbers in each word's state h_j (2H both ways, H one way)."""
        return 2 * self.hidden_dim if self.bidirectional else self.hidden_dim


# What may stand in for a batch's attention weights α (B, T): a tensor, or a mix (seqviz.models.attention.Mix, the
# kind of function the translators take): the model's own weights and the mask of real words,
# (α (B, T), mask (B, T)) -> (B, T). None: the model's own.
Pooling = torch.Tensor | Mix | None


def uniform_pooling(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """α_j = 1/n over each sentence's n real words, 0 on padding (Wiegreffe & Pinter's uniform baseline)."""
    real = mask.to(weights.dtype)  # (B, T)
    return real / real.sum(-1, keepdim=True)


def permuted_pooling(seed: int = 0) -> Mix:
    """A pooling override: each sentence's own weights shuffled over its real words (Jain & Wallace's
    permutation test). Seeded: row b of a batch gets the b-th permutation the seed draws, every call."""

    def permute(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        generator = torch.Generator().manual_seed(int(seed))
        shuffled = weights.clone()  # (B, T): padding stays 0
        for row, n in enumerate(mask.sum(-1).tolist()):  # the real words are the first n
            shuffled[row, :n] = weights[row, :n][torch.randperm(n, generator=generator)]
        return shuffled

    return permute


def _reverse_within(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """x (B, T, F) with each row's first ``lengths[b]`` steps in reverse order; the padding after them stays."""
    steps = torch.arange(x.shape[1], device=x.device)[None, :]  # (1, T)
    source = torch.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)  # (B, T)
    return x.gather(1, source[..., None].expand_as(x))


class AttentionLSTMClassifier(ClassifierBase):
    """Embedding -> (bi)LSTM over the words -> additive attention pooling -> linear.

        h_j = [→h_j; ←h_j]           each word's state, the email read both ways
        u_j = vᵀ tanh(W h_j + b)     a score per word (Bahdanau's additive score, asked by a learned v)
        α = softmax(u)               over the real words only: padding gets exactly 0
        c = Σ_j α_j h_j              one vector for the email
        scores = W_o c + b_o         one per team

    Every call may put other weights in place of α (``weights``: uniform, permuted, the model's own...);
    nothing of a call is kept on the module. Two one-way ``nn.LSTM`` layers read the email, the backward one
    each email reversed within its own length, so padding never reaches a real word's state.
    """

    family = "attention-lstm"
    has_attention = True

    def __init__(self, config: AttentionClassifierConfig):
        super().__init__()
        self.config = config
        self.labels = config.labels
        E, H, D = config.emb_dim, config.hidden_dim, config.state_dim
        self.embedding = nn.Embedding(config.vocab_size, E, padding_idx=0)
        self.forward_lstm = nn.LSTM(E, H, batch_first=True)  # →h_j, left to right
        self.backward_lstm = nn.LSTM(E, H, batch_first=True) if config.bidirectional else None  # ←h_j
        self.W = nn.Linear(D, config.attn_dim)  # W h_j + b
        self.v = nn.Linear(config.attn_dim, 1, bias=False)  # u_j = vᵀ tanh(W h_j + b)
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(D, len(config.labels))  # W_o c + b_o
        with torch.no_grad():  # forget gates open at the start, as LSTMClassifier's (gate order i, f, g, o)
            for lstm in self.lstms:
                lstm.bias_ih_l0[H : 2 * H].fill_(1.0)
                lstm.bias_hh_l0[H : 2 * H].fill_(0.0)

    @property
    def lstms(self) -> tuple[nn.LSTM, ...]:
        """The forward LSTM, and the backward one when bidirectional."""
        return (self.forward_lstm,) if self.backward_lstm is None else (self.forward_lstm, self.backward_lstm)

    @property
    def vocab_size(self) -> int:
        """Words known, the four specials included."""
        return self.embedding.num_embeddings

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Word vectors x_j: (B, T) ids -> (B, T, E)."""
        return self.embedding(ids)

    def states(self, emb: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Every word's state h_j: (B, T, E) -> (B, T, D), zeros on padding."""
        lengths = lengths.to(emb.device)
        x = self.dropout(emb)  # (B, T, E)
        forward, _ = self.forward_lstm(x)  # (B, T, H): padding comes after the last word, never before one
        parts = [forward]
        if self.backward_lstm is not None:
            backward, _ = self.backward_lstm(_reverse_within(x, lengths))  # (B, T, H), reading from the last word
            parts.append(_reverse_within(backward, lengths))
        return torch.cat(parts, dim=-1) * real_words(lengths, emb.shape[1])[..., None]  # (B, T, D)

    def attend(self, states: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores u (B, T) and weights α = softmax(u) over the real words (B, T), from states h (B, T, D)."""
        scores = self.v(torch.tanh(self.W(states))).squeeze(-1)  # (B, T)
        return scores, masked_softmax(scores, real_words(lengths.to(states.device), states.shape[1]))

    def read(
        self, emb: torch.Tensor, lengths: torch.Tensor, weights: Pooling = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logits (B, C), scores u (B, T), the weights pooled with (B, T)) from word vectors (B, T, E).

        ``weights`` replaces α for this call: a (B, T) tensor, or a function of (α, mask of real words)
        (:func:`uniform_pooling`, :func:`permuted_pooling`). The rest of the model is unchanged.
        """
        hidden = self.states(emb, lengths)  # (B, T, D)
        scores, alpha = self.attend(hidden, lengths)  # (B, T), (B, T)
        if callable(weights):
            alpha = weights(alpha, real_words(lengths.to(emb.device), emb.shape[1]))
        elif weights is not None:
            alpha = weights.to(hidden.dtype)
        if alpha.shape != scores.shape:
            raise ValueError(f"the pooling weights must be one per word, shape {tuple(scores.shape)}, "
                             f"not {tuple(alpha.shape)}")
        context = (alpha[:, None, :] @ hidden).squeeze(1)  # (B, D): c = Σ_j α_j h_j
        return self.head(self.dropout(context)), scores, alpha

    def decide(self, emb: torch.Tensor, lengths: torch.Tensor, mix: Mix | None = None):
        """Logits (B, C) and the weights pooled with (B, T), from word vectors (B, T, E); ``mix`` replaces α."""
        logits, _, alpha = self.read(emb, lengths, mix)
        return logits, alpha

    def forward_from_embeddings(self, emb: torch.Tensor, lengths: torch.Tensor, weights: Pooling = None):
        """Logits (B, C) from word vectors (B, T, E), pooled with α or with ``weights`` (see :meth:`read`)."""
        return self.read(emb, lengths, weights)[0]

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor, weights: Pooling = None) -> torch.Tensor:
        """Class scores (logits) ``(B, C)`` for word ids ``(B, T)`` and true lengths ``(B,)``."""
        return self.forward_from_embeddings(self.embed(ids), lengths, weights)

    def predict_proba(self, ids, lengths, weights: Pooling = None) -> np.ndarray:
        """Softmax probabilities ``(B, C)`` as numpy, pooled with α or with ``weights``, without autograd."""
        with torch.inference_mode():
            logits = self(as_long_tensor(ids), as_long_tensor(lengths), weights)
            return torch.softmax(logits.float(), dim=-1).numpy()

    def attention_weights(self, ids, lengths) -> np.ndarray:
        """The model's own α ``(B, T)`` as numpy (rows add to 1, exactly 0 on padding), without autograd."""
        with torch.inference_mode():
            lengths = as_long_tensor(lengths)
            _, alpha = self.attend(self.states(self.embed(as_long_tensor(ids)), lengths), lengths)
            return alpha.numpy().copy()

    def pooling_trace(self, tokens, vocab, weights: Pooling | np.ndarray = None) -> PooledAttentionTrace:
        """One sentence's scores, the weights pooled with and the probabilities; ``weights`` as in :meth:`read`,
        or one weight per word (T,)."""
        ids, seen = one_sentence(tokens, vocab)
        if weights is not None and not callable(weights):
            weights = torch.as_tensor(np.asarray(weights), dtype=torch.float32).reshape(1, -1)  # (1, T)
        with torch.inference_mode():
            logits, scores, alpha = self.read(self.embed(torch.tensor([ids])), torch.tensor([len(ids)]), weights)
            probs = torch.softmax(logits, dim=-1)[0]  # (C,)
        return PooledAttentionTrace(tokens=seen, labels=tuple(self.labels), scores=scores[0].numpy().copy(),
                                    weights=alpha[0].numpy().copy(), probs=probs.numpy().copy(),
                                    replaced=weights is not None)

    def _hidden_for_trace(self, emb: torch.Tensor, lengths: torch.Tensor) -> np.ndarray:
        return self.states(emb, lengths)[0].numpy().copy()  # (T, D)


def replay_attention_pooling(model: AttentionLSTMClassifier, inputs: torch.Tensor) -> dict[str, torch.Tensor]:
    """The attention classifier on one sentence's word vectors ``inputs`` (T, E), step by step, from its own
    weights: the LSTMs by :func:`replay_lstm`, then every score, weight and the context one word at a time.

    Returns states (T, D), scores u (T,), weights α (T,), context c (D,) and logits (C,); a parity test checks
    them against the forward pass to 1e-5.
    """

    def run(lstm: nn.LSTM, x: torch.Tensor) -> torch.Tensor:
        bias = lstm.bias_ih_l0 + lstm.bias_hh_l0  # (4H,)
        return replay_lstm(lstm.weight_ih_l0, lstm.weight_hh_l0, bias, x)["hidden"]  # (T, H)

    with torch.inference_mode():
        parts = [run(model.forward_lstm, inputs)]
        if model.backward_lstm is not None:
            parts.append(run(model.backward_lstm, inputs.flip(0)).flip(0))  # ←h_j read from the last word
        states = torch.cat(parts, dim=-1)  # (T, D)
        W, b, v = model.W.weight, model.W.bias, model.v.weight[0]  # (A, D), (A,), (A,)
        scores = torch.stack([v @ torch.tanh(W @ h_j + b) for h_j in states])  # (T,): u_j
        top = scores.max()
        exps = torch.stack([torch.exp(u_j - top) for u_j in scores])  # (T,), shifted: the same softmax
        weights = exps / exps.sum()  # (T,): α_j
        context = sum((a_j * h_j for a_j, h_j in zip(weights, states, strict=True)), torch.zeros_like(states[0]))
        logits = model.head.weight @ context + model.head.bias  # (C,)
    return {"states": states, "scores": scores, "weights": weights, "context": context, "logits": logits}
