"""The view interface, and a figure: one chart template and the table it draws."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from seqviz import families

VIEWS: dict[str, View] = {}  # name -> the view; filled as seqviz.views imports its modules


@dataclass(frozen=True)
class Figure:
    """A chart to draw: ``make(*args, **kwargs)`` builds the template (seqviz.ui builds it once per server for the
    same arguments), ``table`` is what it draws, the sentence's data, offered as CSV."""

    make: Callable[..., Any]
    table: Any  # a pandas DataFrame
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str | None = None  # the model it draws, when a view draws one chart per model (names its downloads)


class View:
    """One way of looking at a model. Subclasses set the class attributes and override what they offer."""

    name: ClassVar[str] = ""  # the picker's key and its name in the address: /lstm-gates?gates=lstm
    fits_text: ClassVar[str] = ""  # which models fit, in words, for the picker's help
    task: ClassVar[str | None] = None  # only models trained on this task fit (None: any task)
    trace_kind: ClassVar[str] = ""  # what trace() computes; views that compute the same share one cached trace
    needs_sentence: ClassVar[bool] = True  # False: the view reads held-out data, not the visitor's sentence

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            VIEWS[cls.name] = cls()

    def __reduce__(self):  # a view travels to a training worker as its name
        from seqviz.views import get

        return get, (self.name,)

    def requires(self, family: families.Family) -> bool:
        """What the view needs of a family (its traits)."""
        return True

    def fits(self, family: str, task: str | None) -> bool:
        return (self.task is None or task == self.task) and self.requires(families.get(family))

    def trace(self, model, vocabularies: dict, tokens: list[str]) -> Any:
        """The model's trace of the tokens (seqviz.traces values: numpy, safe to cache and share)."""
        raise NotImplementedError(f"the {self.name} view draws measurements, not a trace of a sentence")

    def summary(self, trace) -> str:
        """One line for people: what the trace says (a /train snapshot's caption)."""
        return ""

    def figures(self, traces: dict[str, Any], colours: dict[str, str] | None = None, **options) -> list[Figure]:
        """The charts of these traces (label -> trace), in the order they are drawn."""
        return []
