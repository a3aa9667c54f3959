"""Every model family seqviz can build, train, save and load.

``FAMILIES`` maps a family name to ``(ConfigClass, ModelClass)``: ``ModelClass(ConfigClass(**fields))``
builds a fresh model. A checkpoint names its family, so loading knows what to build.

Classifiers read ``{"ids", "lengths", "labels"}`` batches; translators read ``{"src", "src_lengths", "tgt"}``
(see :mod:`seqviz.tasks`). The three LSTM encoder-decoders share one class; their family is their
config's ``kind`` ("plain", "additive" or "dot").
"""

from __future__ import annotations

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

CLASSIFIER_FAMILIES = ("bow", "rnn", "gru", "lstm", "transformer")
SEQ2SEQ_KINDS = ("plain", "additive", "dot")  # one class, Seq2Seq; the family is its config's kind
TRANSLATOR_FAMILIES = (*SEQ2SEQ_KINDS, "transformer-seq2seq")

FAMILIES: dict[str, tuple[type, type]] = {
    "bow": (NaiveBayesConfig, NaiveBayesClassifier),
    "rnn": (RecurrentClassifierConfig, RNNClassifier),
    "gru": (RecurrentClassifierConfig, GRUClassifier),
    "lstm": (RecurrentClassifierConfig, LSTMClassifier),
    "transformer": (TransformerClassifierConfig, TransformerClassifier),
    "plain": (Seq2SeqConfig, Seq2Seq),
    "additive": (Seq2SeqConfig, Seq2Seq),
    "dot": (Seq2SeqConfig, Seq2Seq),
    "transformer-seq2seq": (TransformerSeq2SeqConfig, TransformerSeq2Seq),
}


def build(family: str, config):
    """A freshly initialised model of ``family`` from its config (a dataclass, or a dict of its fields)."""
    if family not in FAMILIES:
        raise KeyError(f"unknown model family {family!r}; known: {', '.join(FAMILIES)}")
    config_class, model_class = FAMILIES[family]
    if isinstance(config, dict):
        config = config_class(**config)
    if family in SEQ2SEQ_KINDS and getattr(config, "kind", family) != family:
        raise ValueError(f"a {family!r} model needs a config with kind={family!r}, not {config.kind!r}")
    return model_class(config)


def family_of(model) -> str:
    """The family name of a built model."""
    for family, (_, model_class) in FAMILIES.items():
        if type(model) is model_class and (family not in SEQ2SEQ_KINDS or model.config.kind == family):
            return family
    raise KeyError(f"{type(model).__name__} is not a registered model family")


def num_parameters(model) -> int:
    """Numbers the model learned (for bow: its counts)."""
    if hasattr(model, "num_parameters"):
        return int(model.num_parameters())
    return int(sum(p.numel() for p in model.parameters()))
