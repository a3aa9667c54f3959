"""Watch a model learn: what a training run keeps of the model's view of one sentence, every few seconds.

A run is watched through a view (seqviz.views): the first of the views the Train page asks for that the
model's family and task fit (a translator's alignment, an LSTM's gates, a memory model's accuracy against
distance...). :func:`snapshot_fn` returns the function a run calls on its model (under
``torch.inference_mode()``, in the training process); a snapshot is a small frozen value, kept and drawn later
by the page with the same view, long after the model has changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seqviz import views


@dataclass(frozen=True)
class Snapshot:
    view: str  # the name of the view that traced it, and draws it
    trace: Any  # that view's trace (TranslationTrace, LSTMGateTrace, ...): plain numpy values
    summary: str  # one line for people: the translation, the predicted class, the accuracy at 20


def watched_view(wanted, family: str, task: str, tokens) -> views.View | None:
    """The view a run of ``family`` on ``task`` is watched through: the first of ``wanted`` that fits it and has
    what it needs (a sentence, unless it reads held-out data); None when none does."""
    view = views.first_fitting(wanted, family, task)
    if view is None or (view.needs_sentence and not tokens):
        return None
    return view


def snapshot_fn(task, tokens, family: str, wanted) -> Callable[[Any], Snapshot] | None:
    """The snapshot function for a run of ``family`` on ``task`` (a seqviz.tasks.Task) with these tokens."""
    tokens = list(tokens)
    view = watched_view(wanted, family, task.name, tokens)
    if view is None:
        return None
    vocabularies = task.vocabularies

    def snapshot(model) -> Snapshot:
        trace = view.trace(model, vocabularies, tokens)
        return Snapshot(view.name, trace, view.summary(trace))

    return snapshot
