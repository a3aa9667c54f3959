"""The view interface. A view draws :class:`seqviz.charts.Figure` values, made by the chart factories by name."""

from __future__ import annotations

from typing import Any, ClassVar

from seqviz import families
from seqviz.charts import Figure

VIEWS: dict[str, View] = {}  # name -> the view; filled as seqviz.views imports its modules


class View:
    """One way of looking at a model. Subclasses set the class attributes and override what they offer."""

    name: ClassVar[str] = ""  # the picker's key and its name in the address: /lstm-gates?gates=lstm
    fits_text: ClassVar[str] = ""  # which models fit, in words, for the picker's help
    task: ClassVar[str | None] = None  # only models trained on this task fit (None: any task)
    trace_kind: ClassVar[str] = ""  # what trace() computes; views that compute the same share one cached trace
    needs_sentence: ClassVar[bool] = True  # False: the view reads held-out data, not the visitor's sentence
    ships_study: ClassVar[bool] = False  # its held_out() study of a shipped model ships beside it (seqviz.studies)
    figure_names: ClassVar[tuple[str, ...]] = ()  # the figures it draws (seqviz.charts factories), its main one first

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

    def figures(self, traces: dict[str, Any], colours: dict[str, str] | None = None, figure: str | None = None,
                **options) -> list[Figure]:
        """The charts called ``figure`` (one of ``figure_names``; None: the main one) of these traces (label ->
        trace), in the order they are drawn (a view of words only draws none); ValueError names the view's figures."""
        if figure is None and not self.figure_names:
            return []
        name = figure or (self.figure_names[0] if self.figure_names else None)
        if name not in self.figure_names:
            raise ValueError(f"the {self.name} view draws {', '.join(self.figure_names) or 'no figure'}, "
                             f"not {str(figure)[:40]!r}")
        return self.draw(name, traces, colours, **options)

    def draw(self, figure: str, traces: dict[str, Any], colours: dict[str, str] | None, **options) -> list[Figure]:
        """The figures called ``figure`` (one of ``figure_names``) of these traces."""
        raise NotImplementedError(f"the {self.name} view draws no figure")
