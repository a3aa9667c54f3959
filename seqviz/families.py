"""Every model family, one descriptor each: what it is, what it can show, and how a run's sizes build it.

A :class:`Family` is the one place a family's name means anything. It holds the family's label and colour,
the kind of task it serves, the tasks a visitor may train it on, its config and model classes, the size
fields a visitor may set and how a run's spec becomes its config, and its *traits* (recurrent, has LSTM
gates, attends, counts instead of training...). Views decide what fits from the traits; charts take the
colour from here; :mod:`seqviz.runs` checks a spec against ``sizes``; checkpoints name the family and
build from ``model_class``.

This module imports no torch: classes are named as ``"module:Class"`` and imported on first use, so a page
can decide which models fit a view from a checkpoint's header alone.

Adding a family is one entry in :data:`FAMILIES` (and its module). An LSTM translator's attention part is a
family too: ``attention_part`` names the part's class (:class:`seqviz.models.attention.DecoderAttention`),
which says its own score formula and whether it needs a one-way encoder.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from seqviz.palette import BLUE, GREEN, GREY, PURPLE, VERMILLION

# The attention-pooling classifier's colour: a violet no other family and none of a visitor's models
# (seqviz.charts.colours.YOUR_COLOURS) is drawn in; contrast 4.6:1 on white, 4.1:1 on the dark theme.
VIOLET = "#7766CC"


@cache
def _import(path: str) -> Any:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Family:
    name: str  # saved in every checkpoint; the key of FAMILIES
    label: str  # for people: tables, pickers, legends
    colour: str  # a shipped model of this family is drawn in it, on every chart
    task_kind: str  # "classification" or "translation": the batches it reads and the traces it offers
    trains_on: tuple[str, ...]  # the kinds of task a visitor may train it on (seqviz.tasks.Task.kind)
    config_path: str  # "module:Class" of its config dataclass
    model_path: str  # "module:Class": model_class(config) is a fresh model
    sizes: tuple[str, ...] = ()  # RunSpec size fields it uses: embedding, hidden, heads, layers
    spec_fields: Callable[[Any], dict] = field(default=lambda spec: {}, repr=False)  # RunSpec -> config fields
    attention_part: str | None = None  # LSTM translators: "module:Class" of the decoder's attention part
    # Traits: what the family can show. Views fit models by these, never by a family's name.
    recurrent: bool = False  # one recurrent layer read step by step (its Jacobians ∂h_t/∂h_{t-1} can be measured)
    pascanu_bound: bool = False  # a plain tanh RNN: ‖∂h_T/∂h_k‖ ≤ η^(T−k), η = σ_max(W_h), and W_h may be scaled
    lstm_gates: bool = False  # an LSTM whose gates can be replayed (a classifier's, or a translator's encoder)
    attends: bool = False  # its attention weights can be drawn (an alignment, or self-attention)
    heads: bool = False  # multi-head attention in layers (a transformer)
    counts: bool = False  # learns by counting words in one pass: no steps, no learning rate, no gradients

    @property
    def translates(self) -> bool:
        return self.task_kind == "translation"

    @property
    def config_class(self) -> type:
        return _import(self.config_path)

    @property
    def model_class(self) -> type:
        return _import(self.model_path)

    @property
    def part_class(self) -> type | None:
        """The LSTM decoder's attention part (None: not an LSTM translator)."""
        return _import(self.attention_part) if self.attention_part else None

    def config(self, fields):
        """The family's config from a dict of its fields (a config passes through)."""
        return self.config_class(**fields) if isinstance(fields, dict) else fields


# --- How a run's sizes (seqviz.runs.RunSpec) become each kind of config ------------------------------------


def _recurrent_fields(spec) -> dict:
    return {"emb_dim": spec.embedding, "hidden_dim": spec.hidden, "dropout": 0.0}


def _attention_classifier_fields(spec) -> dict:
    """It reads both ways (h_j = [→h_j; ←h_j], ``hidden`` per direction); ``hidden`` is also the score's size."""
    return {"emb_dim": spec.embedding, "hidden_dim": spec.hidden, "attn_dim": spec.hidden, "bidirectional": True,
            "dropout": 0.0}


def _transformer_fields(spec) -> dict:
    return {"d_model": spec.embedding, "d_ff": spec.hidden, "n_heads": spec.heads, "n_layers": spec.layers,
            "dropout": 0.0}


def _lstm_translator_fields(spec) -> dict:
    """An LSTM translator reads both ways (h_j = [→h_j; ←h_j]) unless its attention part needs a one-way encoder;
    ``hidden`` is also the additive score's size (attn_dim)."""
    part = get(spec.family).part_class
    return {"kind": spec.family, "emb_dim": spec.embedding, "hidden": spec.hidden, "attn_dim": spec.hidden,
            "layers": spec.layers, "bidirectional": not part.one_way_encoder, "dropout": 0.0}


def _transformer_translator_fields(spec) -> dict:
    return {"d_model": spec.embedding, "d_ff": spec.hidden, "n_heads": spec.heads, "enc_layers": spec.layers,
            "dec_layers": spec.layers, "dropout": 0.0}


_CLASSIFIERS = "seqviz.models.classifiers"
_RECURRENT = dict(task_kind="classification", trains_on=("classification", "recall"),
                  config_path=f"{_CLASSIFIERS}:RecurrentClassifierConfig", sizes=("embedding", "hidden"),
                  spec_fields=_recurrent_fields, recurrent=True)
_LSTM_TRANSLATOR = dict(task_kind="translation", trains_on=("translation",),
                        config_path="seqviz.models.seq2seq:Seq2SeqConfig", model_path="seqviz.models.seq2seq:Seq2Seq",
                        sizes=("embedding", "hidden", "layers"), spec_fields=_lstm_translator_fields, lstm_gates=True)
_PARTS = "seqviz.models.attention"

# In the order pickers and tables list them.
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("rnn", "RNN classifier (tanh)", VERMILLION, model_path=f"{_CLASSIFIERS}:RNNClassifier",
           pascanu_bound=True, **_RECURRENT),
    Family("gru", "GRU classifier", GREEN, model_path=f"{_CLASSIFIERS}:GRUClassifier", **_RECURRENT),
    Family("lstm", "LSTM classifier", BLUE, model_path=f"{_CLASSIFIERS}:LSTMClassifier", lstm_gates=True,
           **_RECURRENT),
    Family("attention-lstm", "bidirectional LSTM classifier, additive attention pooling (Jain & Wallace)", VIOLET,
           "classification", ("classification",), f"{_CLASSIFIERS}:AttentionClassifierConfig",
           f"{_CLASSIFIERS}:AttentionLSTMClassifier", sizes=("embedding", "hidden"),
           spec_fields=_attention_classifier_fields, attends=True),
    Family("transformer", "transformer encoder classifier", PURPLE, "classification", ("classification",),
           f"{_CLASSIFIERS}:TransformerClassifierConfig", f"{_CLASSIFIERS}:TransformerClassifier",
           sizes=("embedding", "hidden", "heads", "layers"), spec_fields=_transformer_fields, attends=True,
           heads=True),
    Family("bow", "bag-of-words naive Bayes (word counts, no order)", GREY, "classification", ("classification",),
           "seqviz.models.bow:NaiveBayesConfig", "seqviz.models.bow:NaiveBayesClassifier",
           spec_fields=lambda spec: {"alpha": 1.0}, counts=True),
    Family("plain", "LSTM encoder-decoder, no attention (the one-vector bottleneck)", VERMILLION,
           attention_part=f"{_PARTS}:NoAttention", **_LSTM_TRANSLATOR),
    Family("additive", "LSTM encoder-decoder, additive attention (Bahdanau)", BLUE,
           attention_part=f"{_PARTS}:AdditiveAttention", attends=True, **_LSTM_TRANSLATOR),
    Family("dot", "LSTM encoder-decoder, dot-product attention (Luong)", GREEN,
           attention_part=f"{_PARTS}:GeneralAttention", attends=True, **_LSTM_TRANSLATOR),
    Family("transformer-seq2seq", "transformer encoder-decoder (self- and cross-attention)", PURPLE, "translation",
           ("translation",), "seqviz.models.transformer_seq2seq:TransformerSeq2SeqConfig",
           "seqviz.models.transformer_seq2seq:TransformerSeq2Seq", sizes=("embedding", "hidden", "heads", "layers"),
           spec_fields=_transformer_translator_fields, attends=True, heads=True),
)}


def get(name: str) -> Family:
    """The descriptor of ``name``; KeyError names the known families."""
    if name not in FAMILIES:
        raise KeyError(f"unknown model family {str(name)[:40]!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[name]


def trainable_on(kind: str) -> tuple[str, ...]:
    """The families a visitor may train on a task of this kind (seqviz.tasks.Task.kind), in the pickers' order."""
    return tuple(name for name, f in FAMILIES.items() if kind in f.trains_on)


def lstm_translator_kinds() -> tuple[str, ...]:
    """The LSTM translators: one encoder-decoder class, told apart by its attention part (Seq2SeqConfig.kind)."""
    return tuple(name for name, f in FAMILIES.items() if f.attention_part)
