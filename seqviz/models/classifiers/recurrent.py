"""Recurrent email classifiers (the chapter's sections 1 and 2): one cell at every step with the same weights,

    rnn:  h_t = tanh(W_x x_t + W_h h_{t-1} + b)
    gru:  two gates (Cho et al. 2014)
    lstm: c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t,   h_t = o_t ⊙ tanh(c_t)

and classify from the final memory h_T, read at each sentence's true length (padding never reaches it,
because padding comes after the last word). The LSTM also replays its own ``nn.LSTM`` weights step by
step to expose every gate (:func:`seqviz.models.gates.lstm_gate_trace`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from seqviz.models.classifiers.base import ClassifierBase
from seqviz.models.common import check_sizes, one_sentence
from seqviz.models.gates import lstm_gate_trace
from seqviz.traces import LSTMGateTrace


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


class RecurrentClassifier(ClassifierBase):
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


