"""Build and name models of every family: the descriptors live in :mod:`seqviz.families`.

``build(name, config)`` makes a fresh model of a family; a checkpoint names its family, so loading knows what
to build. Every model says its own family (``model.family``), so :func:`family_of` needs no table of special
cases.

Classifiers read ``{"ids", "lengths", "labels"}`` batches; translators read ``{"src", "src_lengths", "tgt"}``
(see :mod:`seqviz.tasks`). The LSTM encoder-decoders share one class; their config's ``kind`` names the family,
whose descriptor names the decoder's attention part.
"""

from __future__ import annotations

from seqviz.families import FAMILIES, Family
from seqviz.families import get as family

__all__ = ["FAMILIES", "Family", "build", "families", "family", "family_of", "num_parameters"]


def families(task_kind: str | None = None) -> list[str]:
    """Family names (serving one kind of task, if given), in the descriptors' order."""
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
