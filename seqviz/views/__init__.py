"""What a page can show of a model: one object per view.

A :class:`View` knows which models fit it (from the family's traits and the task it was trained on, read
from a checkpoint's header: no torch), how to trace a model on a sentence, and how to draw the traces: its
figures, by name (``figure_names``), made by seqviz.charts' factories. Pages ask for views and their figures by
name; /train's "watch it learn" snapshots are views of the model being trained, drawn by the same code.

Every module of this package that defines a view registers it by its ``name``: a new view is one module.
"""

from __future__ import annotations

import importlib
import pkgutil

from seqviz.views.base import VIEWS, View

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def get(name: str) -> View:
    """The view called ``name``; KeyError names the known views."""
    if name not in VIEWS:
        raise KeyError(f"unknown view {str(name)[:40]!r}; known: {', '.join(VIEWS)}")
    return VIEWS[name]


def fits(name: str, family: str, task: str | None) -> bool:
    """Can a model of ``family`` trained on ``task`` be shown in the view ``name``?"""
    return get(name).fits(family, task)


def first_fitting(names, family: str, task: str | None) -> View | None:
    """The first of the views ``names`` that a model of ``family`` and ``task`` fits (None: none does)."""
    return next((get(name) for name in names if get(name).fits(family, task)), None)


__all__ = ["VIEWS", "View", "first_fitting", "fits", "get"]
