"""Models to and from checkpoint files: :func:`dumps` and :func:`save` write one, :func:`load` and
:func:`load_bytes` validate one whole and only then build its model, a :class:`Checkpoint`.

Loading checks the file (seqviz.checkpoints.file), the document, its config and vocabularies
(seqviz.checkpoints.document), then the tensors' names, dtypes and shapes against a model of that config built
on the "meta" device (no memory, no computation); only then are the weights read and the model built. Loaded
models are in eval mode with gradients switched off, so one instance can be cached and shared by every visitor.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seqviz.checkpoints import document, file
from seqviz.checkpoints.file import CheckpointError, fingerprint

MAX_PARAMETERS = 16_000_000  # numbers a checkpoint may hold (the zoo's largest model has far fewer)


@dataclass(frozen=True)
class Checkpoint:
    """A loaded model with everything its file said about it; it reads sentences with its own vocabularies
    (what a view draws of them: seqviz.tracing.trace)."""

    model: Any  # eval mode, gradients off unless loaded with frozen=False
    family: str
    config: Any  # the family's config dataclass
    vocabularies: dict  # name -> seqviz.text.Vocab: "tokens" for classifiers, "src" and "tgt" for translators
    meta: dict  # the whole JSON document, as the file says it (a field an older version lacks is in config only)
    fingerprint: str = ""  # fingerprint() of the file it was loaded from

    @property
    def labels(self) -> tuple[str, ...] | None:
        labels = self.meta.get("labels")
        return tuple(labels) if labels is not None else None

    @property
    def task(self) -> str | None:
        return self.meta.get("task")

    @property
    def metrics(self) -> dict:
        return self.meta.get("metrics") or {}

    @property
    def translates(self) -> bool:
        """True for a translator (source and target vocabularies), False for a classifier."""
        return "src" in self.vocabularies

    @property
    def input_vocab(self):
        """The vocabulary the model reads a typed sentence with: "src" for translators, "tokens" otherwise."""
        return self.vocabularies["src" if self.translates else "tokens"]


# ---------------------------------------------------------------------------------------------------------
# Saving


def dumps(model, meta: dict) -> bytes:
    """The checkpoint file as bytes: what :func:`save` writes, or a download offers.

    ``meta`` holds at least ``vocabularies`` ({name: Vocab or list of words}); usually also ``task``,
    ``seed``, ``steps``, ``train`` and ``metrics``. Deterministic: the same weights and meta give the same
    bytes, so leave volatile values (training seconds) out of ``meta`` when that matters.
    """
    return file.encode(file.model_arrays(model), document.meta_document(model, meta))


def save(path: str | os.PathLike, model, meta: dict) -> Path:
    """Write the checkpoint to ``path`` (".safetensors" added when missing), atomically; returns the path."""
    return file.write(path, dumps(model, meta))


# ---------------------------------------------------------------------------------------------------------
# Loading: validate, then build


def load(path: str | os.PathLike, frozen: bool = True) -> Checkpoint:
    """Load the checkpoint file at ``path`` (".safetensors" added when the path lacks it)."""
    return load_bytes(file.read(path), frozen=frozen)


def load_bytes(data: bytes, frozen: bool = True) -> Checkpoint:
    """Load a checkpoint from its file's bytes (an upload, say), validating everything first."""
    data = bytes(data)
    header, header_size = file.header_of(data)
    meta = document.parse_meta(file.document_text(header))
    family, config = document.config_from_meta(meta)
    vocabularies = document.vocabularies_from_meta(meta, config)
    expected = _expected_tensors(family, config)
    arrays = file.read_weights(data, header, header_size, expected)
    model = _build_with(family, config, arrays)
    model.eval()
    if frozen:
        model.requires_grad_(False)
    return Checkpoint(model=model, family=family, config=config, vocabularies=vocabularies, meta=meta,
                      fingerprint=fingerprint(data))


def _expected_tensors(family: str, config) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (safetensors dtype, shape) of a fresh model of this config, built without memory; a model of more
    than MAX_PARAMETERS numbers is refused, whatever its family (the numpy bag of words too)."""
    from seqviz.models import FAMILIES

    model_class = FAMILIES[family].model_class
    if hasattr(model_class, "expected_shapes"):  # numpy models
        expected = {name: ("F32", shape) for name, shape in model_class.expected_shapes(config).items()}
    else:
        expected = _torch_tensors(family, model_class, config)
    total = sum(math.prod(shape) for _, shape in expected.values())
    if total > MAX_PARAMETERS:
        raise CheckpointError(f"The config describes a model of {total:,} numbers, more than seqviz loads.")
    return expected


def _torch_tensors(family: str, model_class, config) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (safetensors dtype, shape) of a torch model's skeleton, built on the meta device."""
    from seqviz.models.common import skeleton as skeleton_of

    try:
        skeleton = skeleton_of(model_class, config)
    except Exception as error:  # a config the model refuses
        raise CheckpointError(f"A {family} model cannot be built from this config: {str(error)[:160]}") from None
    if getattr(skeleton, "family", family) != family:
        raise CheckpointError(f"The checkpoint says family {family!r} but its config builds a "
                              f"{skeleton.family!r} model.")
    expected = {}
    for name, tensor in skeleton.state_dict().items():
        dtype = file.SAFETENSORS_DTYPES.get(str(tensor.dtype).removeprefix("torch."), str(tensor.dtype))
        expected[name] = (dtype, tuple(tensor.shape))
    return expected


def _build_with(family: str, config, arrays: dict[str, np.ndarray]):
    from seqviz.models import FAMILIES

    model_class = FAMILIES[family].model_class
    if hasattr(model_class, "expected_shapes"):
        model = model_class(config)
        model.load_state_dict(arrays)
        return model
    import torch

    with torch.random.fork_rng(devices=[]):  # building initialises weights; leave the global generator alone
        model = model_class(config)
    state = {name: torch.from_numpy(np.array(array)) for name, array in arrays.items()}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:  # already checked above; kept as a last line of defence
        raise CheckpointError(f"The weights do not fit the model: {str(error)[:160]}") from None
    return model
