"""What every task offers the training loop, the checkpoints and the pages, and the helpers they share."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from seqviz.text import Vocab

DATA_SEED = 0  # the seed of the shipped data splits; a model's own seed only drives its training


def pad_batch(sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad id lists with 0 to the longest: -> ids (B, T) long, lengths (B,) long."""
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    ids = torch.zeros(len(sequences), int(lengths.max()) if len(sequences) else 0, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(list(seq), dtype=torch.long)
    return ids, lengths


def _batched_proba(model, sequences: Sequence[Sequence[int]], batch_size: int = 256) -> np.ndarray:
    """Class probabilities (n, C) for many id lists, in batches of similar length."""
    order = np.argsort([len(s) for s in sequences], kind="stable")
    probs: list[np.ndarray | None] = [None] * len(sequences)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        ids, lengths = pad_batch([sequences[i] for i in chunk])
        for i, row in zip(chunk, model.predict_proba(ids, lengths), strict=True):
            probs[i] = row
    return np.stack(probs)


class Task:
    """What every task offers the training loop, the checkpoints and the pages."""

    name: str = ""
    kind: str = ""  # what kind of task: the families that train on it say so (seqviz.families.Family.trains_on)
    label: str = ""  # what the task asks, for people (the Train page's picker)
    headline_name: str = ""  # what headline() measures, for people
    labels: tuple[str, ...] | None = None
    vocabularies: dict[str, Vocab]

    def model_fields(self) -> dict:
        """The config fields a model of this task takes from the data (vocabulary sizes, labels)."""
        raise NotImplementedError

    def batch(self, rng: np.random.Generator, batch_size: int, progress: float = 1.0) -> dict[str, torch.Tensor]:
        """A training batch drawn with ``rng``; ``progress`` (0 -> 1) lets a task run a curriculum."""
        raise NotImplementedError

    def evaluate(self, model) -> dict:
        """Held-out metrics of ``model`` (a JSON-ready dict)."""
        raise NotImplementedError

    def headline(self, metrics: dict) -> float:
        """The one number a progress bar shows."""
        raise NotImplementedError

    @classmethod
    def label_names(cls) -> tuple[str, ...] | None:
        """The classes a model of this task answers with (None: it translates); no data generated."""
        return None

    @classmethod
    def summary(cls, metrics: dict) -> dict:
        """The few held-out numbers that tell whether a model reached its target."""
        raise NotImplementedError

    @classmethod
    def describe(cls, metrics: dict) -> str:
        """:meth:`summary` in one line, for people."""
        raise NotImplementedError


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"
