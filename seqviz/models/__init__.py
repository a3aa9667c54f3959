"""Every model family seqviz can build, train, save and load: the family registry.

``FAMILIES`` maps a family name to a :class:`Family`: its config dataclass, its model class, the kind of
task it serves ("classification" or "translation") and a short label for people. ``build(name, config)``
makes a fresh model; a checkpoint names its family, so loading knows what to build. Every model says
its own family (``model.family``), so :func:`family_of` needs no table of special cases.

Classifiers read ``{"ids", "lengths", "labels"}`` batches; translators read ``{"src", "src_lengths", "tgt"}``
(see :mod:`seqviz.tasks`). The three LSTM encoder-decoders share one class; their config's ``kind``
("plain", "additive" or "dot") chooses the decoder's attention part.

Adding a family touches its module, this registry and, if it is shipped, a zoo entry.
"""

from __future__ import annotations

from typing import NamedTuple

from seqviz.models.bow import NaiveBayesClassifier, NaiveBayesConfig
from seqviz.models.classifiers import (
    GRUClassifier,
    LSTMClassifier,
    RecurrentClassifierConfig,
    RNNClassifier,
    TransformerClassifier,
    TransformerClassifierConfig,
)
from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig
from seqviz.models.transformer_seq2seq import TransformerSeq2Seq, TransformerSeq2SeqConfig


class Family(NamedTuple):
    """A registry entry; ``FAMILIES[name][0]`` and ``[1]`` are still the config and model classes."""

    config_class: type  # the family's config dataclass
    model_class: type  # model_class(config_class(**fields)) is a fresh model
    task_kind: str  # "classification" or "translation": the batches and the traces it offers
    label: str  # for people: tables, pickers, legends

    def config(self, fields):
        """The family's config from a dict of its fields (a config passes through)."""
        return self.config_class(**fields) if isinstance(fields, dict) else fields


FAMILIES: dict[str, Family] = {  # name (saved in every checkpoint) -> entry
    "bow": Family(NaiveBayesConfig, NaiveBayesClassifier, "classification",
                  "bag-of-words naive Bayes (word counts, no order)"),
    "rnn": Family(RecurrentClassifierConfig, RNNClassifier, "classification", "RNN classifier (tanh)"),
    "gru": Family(RecurrentClassifierConfig, GRUClassifier, "classification", "GRU classifier"),
    "lstm": Family(RecurrentClassifierConfig, LSTMClassifier, "classification", "LSTM classifier"),
    "transformer": Family(TransformerClassifierConfig, TransformerClassifier, "classification",
                          "transformer encoder classifier"),
    "plain": Family(Seq2SeqConfig, Seq2Seq, "translation",
                    "LSTM encoder-decoder, no attention (the one-vector bottleneck)"),
    "additive": Family(Seq2SeqConfig, Seq2Seq, "translation", "LSTM encoder-decoder, additive attention (Bahdanau)"),
    "dot": Family(Seq2SeqConfig, Seq2Seq, "translation", "LSTM encoder-decoder, dot-product attention (Luong)"),
    "transformer-seq2seq": Family(TransformerSeq2SeqConfig, TransformerSeq2Seq, "translation",
                                  "transformer encoder-decoder (self- and cross-attention)"),
}


def family(name: str) -> Family:
    """The registry entry of ``name``; KeyError names the known families."""
    if name not in FAMILIES:
        raise KeyError(f"unknown model family {name!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[name]


def families(task_kind: str | None = None) -> list[str]:
    """Family names (serving one kind of task, if given), in the registry's order."""
    return [name for name, f in FAMILIES.items() if task_kind is None or f.task_kind == task_kind]


def build(name: str, config):
    """A freshly initialised model of family ``name`` from its config (a dataclass, or a dict of its fields)."""
    model = family(name).model_class(family(name).config(config))
    if model.family != name:
        raise ValueError(f"this config builds a {model.family!r} model, not a {name!r} one")
    return model


def family_of(model) -> str:
    """The family name of a built model."""
    name = getattr(model, "family", None)
    if name not in FAMILIES or type(model) is not FAMILIES[name].model_class:
        raise KeyError(f"{type(model).__name__} is not a registered model family")
    return name


def num_parameters(model) -> int:
    """Numbers the model learned (for bow: its counts)."""
    if hasattr(model, "num_parameters"):
        return int(model.num_parameters())
    return int(sum(p.numel() for p in model.parameters()))
