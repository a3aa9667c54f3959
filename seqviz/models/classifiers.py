"""Sentence classifiers that read word order: rnn, gru, lstm, an LSTM that pools with attention, and a small
transformer encoder.

All five read a batch of word ids ``(B, T)`` padded with ``<pad>`` = 0 plus each sentence's true length,
and return one score per class. They share one surface, so the training loop, the tasks and the pages
treat them alike:

- ``embed(ids)`` -> ``(B, T, E)`` word vectors x_t, and ``forward_from_embeddings(emb, lengths)`` -> logits,
  so autograd can give d(score)/d(x_t) for every position (the vanishing-gradients page);
- ``forward(ids, lengths)`` -> ``(B, C)`` logits; ``loss(batch)`` -> mean cross-entropy;
- ``predict_proba(ids, lengths)`` -> numpy ``(B, C)``;
- ``trace(tokens, vocab)`` -> :class:`seqviz.traces.ClassifierTrace`.

Recurrent models (the chapter's section 1 and 2) apply one cell at every step with the same weights:

    rnn:  h_t = tanh(W_x x_t + W_h h_{t-1} + b)
    gru:  two gates (Cho et al. 2014)
    lstm: c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t,   h_t = o_t ⊙ tanh(c_t)

and classify from the final memory h_T, read at each sentence's true length (padding never reaches it,
because padding comes after the last word). The LSTM also replays its own ``nn.LSTM`` weights step by
step to expose every gate (:func:`seqviz.models.gates.lstm_gate_trace`).

The transformer (section 5) drops the recurrence: every word attends to every word in one step,

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V,

with learned position vectors added to the word vectors, and classifies from the mean of its outputs.
Attention is :class:`seqviz.models.attention.MultiHeadAttention`, the translator's too. Its weights are
returned by the forward pass (never kept on the module), so ``attention_trace`` can show every layer
and head.

The attention-pooling LSTM (Jain & Wallace 2019's setting, for "is attention an explanation?") reads the email
both ways and classifies from one vector, a weighted average of every word's state:

    u_j = vᵀ tanh(W h_j + b),   α = softmax(u),   c = Σ_j α_j h_j

Its weights α are returned by each call, and a call may put others in their place (uniform, or its own
permuted over the words) to ask whether the decision depends on them; ``replay_attention_pooling`` recomputes
every step from the module's own weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from seqviz.models.attention import MultiHeadAttention, masked_softmax
from seqviz.models.common import check_sizes, one_sentence
from seqviz.models.gates import lstm_gate_trace, replay_lstm
from seqviz.traces import ClassifierTrace, LSTMGateTrace, PooledAttentionTrace, SelfAttentionTrace

__all__ = [  # lstm_gate_trace and replay_lstm live in seqviz.models.gates; importable from here too
    "AttentionClassifierConfig", "AttentionLSTMClassifier", "GRUClassifier", "LSTMClassifier", "Pooling",
    "RNNClassifier", "RecurrentClassifier", "RecurrentClassifierConfig", "TransformerClassifier",
    "TransformerClassifierConfig", "lstm_gate_trace", "permuted_pooling", "replay_attention_pooling", "replay_lstm",
    "uniform_pooling",
]


def _as_long_tensor(values) -> torch.Tensor:
    return values.long() if isinstance(values, torch.Tensor) else torch.as_tensor(np.asarray(values), dtype=torch.long)


class _ClassifierBase(nn.Module):
    """What every torch classifier shares: loss, probabilities and the sentence-level trace."""

    labels: tuple[str, ...]
    family: ClassVar[str] = ""  # the name in seqviz.models.FAMILIES

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward_from_embeddings(self, emb: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Class scores (logits) ``(B, C)`` for word ids ``(B, T)`` and true lengths ``(B,)``."""
        return self.forward_from_embeddings(self.embed(ids), lengths)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean cross-entropy of the batch's labels."""
        logits = self(batch["ids"], batch["lengths"])  # (B, C)
        return F.cross_entropy(logits, batch["labels"])

    def predict_proba(self, ids, lengths) -> np.ndarray:
        """Softmax probabilities ``(B, C)`` as numpy, computed without autograd."""
        with torch.inference_mode():
            logits = self(_as_long_tensor(ids), _as_long_tensor(lengths))
            return torch.softmax(logits.float(), dim=-1).numpy()

    def trace(self, tokens, vocab) -> ClassifierTrace:
        """The model's reading of one tokenized sentence: probabilities and, for recurrent models, h_t."""
        ids, seen = one_sentence(tokens, vocab)
        with torch.inference_mode():
            ids_t = torch.tensor([ids])  # (1, T)
            lengths = torch.tensor([len(ids)])
            emb = self.embed(ids_t)  # (1, T, E)
            probs = torch.softmax(self.forward_from_embeddings(emb, lengths), dim=-1)[0]  # (C,)
            hidden = self._hidden_for_trace(emb, lengths)
        return ClassifierTrace(tokens=seen, labels=tuple(self.labels), probs=probs.numpy().copy(), hidden=hidden)

    def _hidden_for_trace(self, emb: torch.Tensor, lengths: torch.Tensor) -> np.ndarray | None:
        return None


# ---------------------------------------------------------------------------------------------------------
# Recurrent classifiers


@dataclass
class RecurrentClassifierConfig:
    vocab_size: int = 64  # words known, the four specials included (set from the task's Vocab)
    labels: tuple[str, ...] = ("a", "b")  # class names, in the order of the output scores
    emb_dim: int = 32  # E: numbers per word vector x_t
    hidden_dim: int = 64  # H: numbers in the memory h_t (and the LSTM's cell c_t)
    dropout: float = 0.0  # dropout on x_t and on the final h_T, during training only

    def __post_init__(self):
        self.labels = tuple(self.labels)
        check_sizes(self, vocab=("vocab_size",), labels=("labels",), width=("emb_dim", "hidden_dim"))
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")


class RecurrentClassifier(_ClassifierBase):
    """Embedding -> one recurrent layer -> linear on the final hidden state h_T (at the true length)."""

    cell: ClassVar[str] = ""
    _layers: ClassVar[dict[str, type[nn.Module]]] = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}

    def __init__(self, config: RecurrentClassifierConfig):
        super().__init__()
        self.config = config
        self.labels = config.labels
        self.embedding = nn.Embedding(config.vocab_size, config.emb_dim, padding_idx=0)
        self.rnn = self._layers[self.cell](config.emb_dim, config.hidden_dim, batch_first=True)
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.hidden_dim, len(config.labels))

    @property
    def family(self) -> str:
        return self.cell

    @property
    def recurrent_layer(self) -> nn.RNNBase:
        """The one recurrent layer (nn.RNN, nn.GRU or nn.LSTM), read-only: the gradient analyses replay it."""
        return self.rnn

    @property
    def vocab_size(self) -> int:
        """Words known, the four specials included."""
        return self.embedding.num_embeddings

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Word vectors x_t: (B, T) ids -> (B, T, E)."""
        return self.embedding(ids)

    def hidden_states_from_embeddings(self, emb: torch.Tensor) -> torch.Tensor:
        """The memory after each word, h_1 .. h_T: (B, T, E) -> (B, T, H), starting from h_0 = 0."""
        out, _ = self.rnn(self.dropout(emb))  # (B, T, H)
        return out

    def forward_from_embeddings(self, emb: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) from word vectors (B, T, E): the head reads h at each sentence's last real word."""
        hidden = self.hidden_states_from_embeddings(emb)  # (B, T, H)
        rows = torch.arange(hidden.shape[0], device=hidden.device)
        final = hidden[rows, lengths.to(hidden.device) - 1]  # (B, H): h_T at the true length
        return self.head(self.dropout(final))  # (B, C)

    def _hidden_for_trace(self, emb: torch.Tensor, lengths: torch.Tensor) -> np.ndarray:
        return self.hidden_states_from_embeddings(emb)[0].numpy().copy()  # (T, H)


class RNNClassifier(RecurrentClassifier):
    """Elman RNN: h_t = tanh(W_x x_t + W_h h_{t-1} + b)."""

    cell = "rnn"


class GRUClassifier(RecurrentClassifier):
    """GRU (Cho et al. 2014): a reset and an update gate, h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_{t-1}."""

    cell = "gru"


class LSTMClassifier(RecurrentClassifier):
    """LSTM (Hochreiter & Schmidhuber 1997): c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t, h_t = o_t ⊙ tanh(c_t).

    The forget gate's bias starts at 1 so that, before training, the cell keeps most of c_{t-1}:
    the clean path along the cell state is open from the first step (Gers et al. 2000).
    """

    cell = "lstm"

    def __init__(self, config: RecurrentClassifierConfig):
        super().__init__(config)
        hidden = config.hidden_dim
        with torch.no_grad():  # gate order in nn.LSTM's weights: i, f, g, o
            self.rnn.bias_ih_l0[hidden : 2 * hidden].fill_(1.0)
            self.rnn.bias_hh_l0[hidden : 2 * hidden].fill_(0.0)

    def gate_trace(self, tokens, vocab) -> LSTMGateTrace:
        """Every gate, the cell and the memory, per word and per unit, replayed from nn.LSTM's weights."""
        ids, seen = one_sentence(tokens, vocab)
        with torch.inference_mode():
            emb = self.embed(torch.tensor([ids]))[0]  # (T, E)
        return lstm_gate_trace(self.rnn, emb, seen)


# ---------------------------------------------------------------------------------------------------------
# Transformer encoder classifier


@dataclass
class TransformerClassifierConfig:
    vocab_size: int = 64  # words known, the four specials included (set from the task's Vocab)
    labels: tuple[str, ...] = ("a", "b")  # class names, in the order of the output scores
    d_model: int = 64  # numbers per position, in every layer
    n_heads: int = 4  # N: attention heads per layer (d_model must divide by it)
    n_layers: int = 2  # L: encoder blocks
    d_ff: int = 128  # hidden units of each block's feed-forward network
    max_len: int = 64  # positions with a learned position vector (>= the longest sentence read)
    dropout: float = 0.1  # dropout on attention weights and residual branches, during training only

    def __post_init__(self):
        self.labels = tuple(self.labels)
        check_sizes(self, vocab=("vocab_size",), labels=("labels",), width=("d_model", "d_ff"),
                    heads=("n_heads",), layers=("n_layers",), positions=("max_len",))
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be a multiple of n_heads")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: x + attention(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, config: TransformerClassifierConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(config.d_model)
        self.attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout)
        self.dropout = nn.Dropout(config.dropout)
        self.norm2 = nn.LayerNorm(config.d_model)
        self.ffn = nn.Sequential(
            nn.Linear(config.d_model, config.d_ff),
            nn.GELU(),
            nn.Linear(config.d_ff, config.d_model),
            nn.Dropout(config.dropout),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, D), mask (B, 1, 1, T) True on real words -> (B, T, D), weights (B, N, T, T)."""
        mixed, weights = self.attn(self.norm1(x), mask=mask)
        x = x + self.dropout(mixed)  # (B, T, D)
        return x + self.ffn(self.norm2(x)), weights


class TransformerClassifier(_ClassifierBase):
    """Word vector + learned position vector -> L encoder blocks -> mean over the words -> linear."""

    family = "transformer"

    def __init__(self, config: TransformerClassifierConfig):
        super().__init__()
        self.config = config
        self.labels = config.labels
        self.embedding = nn.Embedding(config.vocab_size, config.d_model, padding_idx=0)
        self.positions = nn.Embedding(config.max_len, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, len(config.labels))

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Word vectors x_t (positions not yet added): (B, T) ids -> (B, T, D)."""
        if ids.shape[1] > self.config.max_len:
            raise ValueError(f"this transformer reads at most {self.config.max_len} words")
        return self.embedding(ids)

    def encode(self, emb: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Outputs (B, T, D) and the attention weights of every layer, stacked: (B, L, N, T, T)."""
        length = emb.shape[1]
        steps = torch.arange(length, device=emb.device)
        mask = (steps[None, :] < lengths.to(emb.device)[:, None])[:, None, None, :]  # (B, 1, 1, T): real words
        x = self.dropout(emb + self.positions(steps)[None])  # (B, T, D)
        all_weights = []
        for block in self.blocks:
            x, weights = block(x, mask)  # weights (B, N, T, T)
            all_weights.append(weights)
        return self.norm(x), torch.stack(all_weights, dim=1)

    def forward_from_embeddings(self, emb: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) from word vectors (B, T, D): mean of the outputs over each sentence's real words."""
        out, _ = self.encode(emb, lengths)  # (B, T, D)
        real = (torch.arange(emb.shape[1], device=emb.device)[None, :] < lengths.to(emb.device)[:, None]).float()
        pooled = (out * real[..., None]).sum(1) / real.sum(1, keepdim=True)  # (B, D)
        return self.head(pooled)  # (B, C)

    def attention_trace(self, tokens, vocab) -> SelfAttentionTrace:
        """Self-attention weights of every layer and head for one sentence: (L, N, T, T)."""
        ids, seen = one_sentence(tokens, vocab)
        with torch.inference_mode():
            ids_t = torch.tensor([ids])  # (1, T)
            _, weights = self.encode(self.embed(ids_t), torch.tensor([len(ids)]))  # (1, L, N, T, T)
        return SelfAttentionTrace(tokens=seen, weights=weights[0].numpy().copy())


# ---------------------------------------------------------------------------------------------------------
# An LSTM classifier that pools its states with attention (the setting Jain & Wallace 2019 studied)


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


# What may stand in for a batch's attention weights α (B, T): a tensor, or a function of the model's own
# weights and the mask of real words, (α (B, T), mask (B, T)) -> (B, T). None: the model's own.
Pooling = torch.Tensor | Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None


def uniform_pooling(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """α_j = 1/n over each sentence's n real words, 0 on padding (Wiegreffe & Pinter's uniform baseline)."""
    real = mask.to(weights.dtype)  # (B, T)
    return real / real.sum(-1, keepdim=True)


def permuted_pooling(seed: int = 0) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
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


class AttentionLSTMClassifier(_ClassifierBase):
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
        return torch.cat(parts, dim=-1) * _real_words(lengths, emb.shape[1])[..., None]  # (B, T, D)

    def attend(self, states: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores u (B, T) and weights α = softmax(u) over the real words (B, T), from states h (B, T, D)."""
        scores = self.v(torch.tanh(self.W(states))).squeeze(-1)  # (B, T)
        return scores, masked_softmax(scores, _real_words(lengths.to(states.device), states.shape[1]))

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
            alpha = weights(alpha, _real_words(lengths.to(emb.device), emb.shape[1]))
        elif weights is not None:
            alpha = weights.to(hidden.dtype)
        if alpha.shape != scores.shape:
            raise ValueError(f"the pooling weights must be one per word, shape {tuple(scores.shape)}, "
                             f"not {tuple(alpha.shape)}")
        context = (alpha[:, None, :] @ hidden).squeeze(1)  # (B, D): c = Σ_j α_j h_j
        return self.head(self.dropout(context)), scores, alpha

    def forward_from_embeddings(self, emb: torch.Tensor, lengths: torch.Tensor, weights: Pooling = None):
        """Logits (B, C) from word vectors (B, T, E), pooled with α or with ``weights`` (see :meth:`read`)."""
        return self.read(emb, lengths, weights)[0]

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor, weights: Pooling = None) -> torch.Tensor:
        """Class scores (logits) ``(B, C)`` for word ids ``(B, T)`` and true lengths ``(B,)``."""
        return self.forward_from_embeddings(self.embed(ids), lengths, weights)

    def predict_proba(self, ids, lengths, weights: Pooling = None) -> np.ndarray:
        """Softmax probabilities ``(B, C)`` as numpy, pooled with α or with ``weights``, without autograd."""
        with torch.inference_mode():
            logits = self(_as_long_tensor(ids), _as_long_tensor(lengths), weights)
            return torch.softmax(logits.float(), dim=-1).numpy()

    def attention_weights(self, ids, lengths) -> np.ndarray:
        """The model's own α ``(B, T)`` as numpy (rows add to 1, exactly 0 on padding), without autograd."""
        with torch.inference_mode():
            lengths = _as_long_tensor(lengths)
            _, alpha = self.attend(self.states(self.embed(_as_long_tensor(ids)), lengths), lengths)
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


def _real_words(lengths: torch.Tensor, length: int) -> torch.Tensor:
    """(B, T) True on each sentence's real words, False on the padding after them."""
    return torch.arange(length, device=lengths.device)[None, :] < lengths[:, None]


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
