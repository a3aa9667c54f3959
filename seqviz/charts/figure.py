"""A figure: one chart template and the table it draws, made by a factory found by name.

Every chart the app draws is made by one *figure factory*: a function from measured values (a trace, a run's
metadata, the worked example) to a :class:`Figure`, registered under a name with :func:`figure`. Views and
``seqviz.story``'s chapter figures call factories by name (``charts.make("alignment", ...)``); pages draw the
figures they get (``ui.show``, ``ui.draw``) and never pair a template with its table by hand. The name travels
with the chart into the page (Vega-Lite's ``usermeta``), so tests ask which charts a page shows, not how many.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

FIGURES: dict[str, Callable[..., Figure]] = {}  # name -> factory; filled as seqviz.charts imports its modules


@dataclass(frozen=True)
class Figure:
    """A chart to draw: ``make(*args, **kwargs)`` builds the template (seqviz.ui builds it once per server for the
    same arguments), ``table`` is what it draws, the sentence's data, offered as CSV."""

    name: str  # the factory that made it ("alignment"): which chart this is
    make: Callable[..., Any]
    table: Any  # a pandas DataFrame
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str | None = None  # the model it draws, when a view draws one chart per model (names its downloads)

    def of(self, label: str) -> Figure:
        """The same figure, drawn for the model ``label``."""
        return dataclasses.replace(self, label=label)


def drawn(make: Callable[..., Any], table, *args, **kwargs) -> Figure:
    """What a factory returns: ``make(*args, **kwargs)`` drawing ``table`` (the factory's name is set by
    :func:`figure`)."""
    return Figure("", make, table, args, kwargs)


def figure(name: str) -> Callable[[Callable[..., Figure]], Callable[..., Figure]]:
    """Register a figure factory under ``name`` (a decorator); the figures it makes carry the name."""

    def register(factory: Callable[..., Figure]) -> Callable[..., Figure]:
        if name in FIGURES:
            raise ValueError(f"two figure factories are called {name!r}")

        @functools.wraps(factory)
        def named(*args, **kwargs) -> Figure:
            return dataclasses.replace(factory(*args, **kwargs), name=name)

        FIGURES[name] = named
        return named

    return register


def make(name: str, *args, **kwargs) -> Figure:
    """The figure the factory ``name`` makes of these values; KeyError names the known factories."""
    if name not in FIGURES:
        raise KeyError(f"unknown figure {str(name)[:40]!r}; known: {', '.join(sorted(FIGURES))}")
    return FIGURES[name](*args, **kwargs)
