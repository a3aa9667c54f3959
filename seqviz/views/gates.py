"""The LSTM's gates, word by word and unit by unit, replayed from the model's own weights."""

from __future__ import annotations

from seqviz import charts
from seqviz.views.base import View


class Gates(View):
    """f_t, i_t, o_t of every unit at every word (a translator's: its encoder's, forward direction)."""

    name = "gates"
    fits_text = "any model with an LSTM: a classifier, a memory model, a translator's encoder"
    trace_kind = "gates"

    def requires(self, family):
        return family.lstm_gates

    def trace(self, model, vocabularies, tokens):
        vocab = vocabularies["src"] if "src" in vocabularies else vocabularies["tokens"]
        return model.gate_trace(list(tokens), vocab)  # seqviz.traces.LSTMGateTrace

    def summary(self, trace) -> str:
        return f"Mean forget gate: {float(trace.forget_gate.mean()):.2f}."

    figure_names = ("gates", "unit-lines", "mean-forget")

    def draw(self, figure, traces, colours=None, units: int = 16, unit: int = 0, **options):
        """"gates": one grid of heatmaps per model, the ``units`` units whose cell state moves most; "unit-lines":
        unit ``unit``'s gates and memory across the sentence; "mean-forget": how much of its memory each word
        keeps."""
        from seqviz.analysis.gates import most_active_units

        if figure == "gates":
            return [charts.make("gates", t, most_active_units(t, units)) for t in traces.values()]
        return [charts.make(figure, t, unit) if figure == "unit-lines" else charts.make(figure, t)
                for t in traces.values()]


class UnitsLikeThis(View):
    """LSTMVis's "units like this": the units whose cell state stays above a threshold across a phrase of the
    sentence, and the held-out sentences where they do the same (seqviz.analysis.units_like_this)."""

    name = "units-like-this"
    fits_text = Gates.fits_text
    trace_kind = "gates"  # the page's gate trace, shared

    def requires(self, family):
        return family.lstm_gates

    def trace(self, model, vocabularies, tokens):
        return Gates.trace(self, model, vocabularies, tokens)

    def units(self, trace, start: int, end: int, threshold: float) -> list[int]:
        """The units on across words start .. end (either order, clamped), the strongest first."""
        from seqviz.analysis.units_like_this import units_on

        return units_on(trace, start, end, threshold)

    def summary(self, trace, start: int = 0, end: int = 0, threshold: float = 0.5) -> str:
        from seqviz.analysis.units_like_this import phrase
        from seqviz.limits import UNITS_LIKE_THIS_DRAWN

        units = self.units(trace, start, end, threshold)
        start, end = phrase(len(trace.tokens), start, end)
        words = " ".join(trace.tokens[start:end + 1])
        if not units:
            return (f"No unit's cell state stays above {threshold:g} at every word of “{words}”: drawn are the "
                    f"{min(UNITS_LIKE_THIS_DRAWN, trace.cell.shape[1])} that come closest, each at {threshold:g} or "
                    "below somewhere in the phrase. Lower the threshold or shorten the phrase.")
        drawn = (f" The {UNITS_LIKE_THIS_DRAWN} strongest are drawn." if len(units) > UNITS_LIKE_THIS_DRAWN else "")
        return (f"{len(units)} of the {trace.cell.shape[1]} units keep their cell state above {threshold:g} at every "
                f"word of “{words}”: {', '.join(str(u) for u in sorted(units))}.{drawn}")

    def held_out(self, model, task) -> dict:
        """The cell states of held-out sentences (at most seqviz.limits.UNITS_LIKE_THIS_SENTENCES), to search."""
        from seqviz.analysis.units_like_this import held_out_states

        states = held_out_states(model, task)
        return {"states": states, "sentences": len(states)}

    def search(self, held_out: dict, trace, start: int, end: int, threshold: float):
        """The held-out spans where this phrase's units stay above the threshold too (a units_like_this.Search)."""
        from seqviz.analysis.units_like_this import phrase, search

        start, end = phrase(len(trace.tokens), start, end)
        return search(held_out["states"], self.units(trace, start, end, threshold), threshold, end - start + 1)

    figure_names = ("units-like-this",)

    def draw(self, figure, traces, colours=None, start: int = 0, end: int = 0, threshold: float = 0.5, **options):
        """The phrase's units (the strongest seqviz.limits.UNITS_LIKE_THIS_DRAWN) across each sentence; when no unit
        stays above the threshold, the ones that come closest (the summary says so)."""
        from seqviz.analysis.units_like_this import closest_units, phrase
        from seqviz.limits import UNITS_LIKE_THIS_DRAWN

        figures = []
        for t in traces.values():
            units = (self.units(t, start, end, threshold) or closest_units(t, start, end, UNITS_LIKE_THIS_DRAWN))
            figures.append(charts.make(figure, t, sorted(units[:UNITS_LIKE_THIS_DRAWN]),
                                       *phrase(len(t.tokens), start, end), threshold))
        return figures
