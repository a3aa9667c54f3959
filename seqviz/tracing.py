"""A loaded checkpoint's trace of a sentence, as a view reads it: the one place checkpoints meet views.

The checkpoint format (seqviz.checkpoints) knows nothing of views; a caller that holds a
:class:`~seqviz.checkpoints.Checkpoint` and wants what a page draws asks here.
"""

from __future__ import annotations

from typing import Any


def trace(checkpoint, view_name: str, tokens, **options) -> Any:
    """The model's trace of ``tokens`` as the view ``view_name`` reads it (seqviz.views), with the checkpoint's
    own vocabularies; ``options`` go to the view's ``trace`` (``max_len=`` for a translator, say)."""
    from seqviz import views

    return views.get(view_name).trace(checkpoint.model, checkpoint.vocabularies, list(tokens), **options)
