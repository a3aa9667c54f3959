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
