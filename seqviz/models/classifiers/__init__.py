"""Sentence classifiers that read word order: rnn, gru, lstm (:mod:`.recurrent`), an LSTM that pools with
attention (:mod:`.attention`), and a small transformer encoder (:mod:`.transformer`).

All five read a batch of word ids ``(B, T)`` padded with ``<pad>`` = 0 plus each sentence's true length,
and return one score per class. They share one surface (:mod:`.base`), so the training loop, the tasks, the
pages and the explanations treat them alike. Every name is importable from here.
"""

from seqviz.models.classifiers.attention import (
    AttentionClassifierConfig,
    AttentionLSTMClassifier,
    Pooling,
    permuted_pooling,
    replay_attention_pooling,
    uniform_pooling,
)
from seqviz.models.classifiers.base import ClassifierBase
from seqviz.models.classifiers.recurrent import (
    GRUClassifier,
    LSTMClassifier,
    RecurrentClassifier,
    RecurrentClassifierConfig,
    RNNClassifier,
)
from seqviz.models.classifiers.transformer import EncoderBlock, TransformerClassifier, TransformerClassifierConfig
from seqviz.models.gates import lstm_gate_trace, replay_lstm  # importable from here too, as before

__all__ = [
    "AttentionClassifierConfig", "AttentionLSTMClassifier", "ClassifierBase", "EncoderBlock", "GRUClassifier",
    "LSTMClassifier", "Pooling", "RNNClassifier", "RecurrentClassifier", "RecurrentClassifierConfig",
    "TransformerClassifier", "TransformerClassifierConfig", "lstm_gate_trace", "permuted_pooling",
    "replay_attention_pooling", "replay_lstm", "uniform_pooling",
]
