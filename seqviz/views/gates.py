"""The LSTM's gates, word by word and unit by unit, replayed from the model's own weights."""

from __future__ import annotations

from seqviz import charts
from seqviz.views.base import Figure, View


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

    def figures(self, traces, colours=None, units: int = 16, **options):
        """One grid of heatmaps per model: the ``units`` units whose cell state moves most."""
        from seqviz.analysis.gates import most_active_units

        return [Figure(charts.gates_chart, charts.gates_data(trace, most_active_units(trace, units)),
                       (charts.gate_column_px(len(trace.tokens)),)) for trace in traces.values()]

    @staticmethod
    def unit(trace, unit: int) -> Figure:
        """One unit's gates and memory across the sentence."""
        return Figure(charts.unit_lines_chart, charts.unit_lines_data(trace, unit))

    @staticmethod
    def keeping(trace) -> Figure:
        """The mean forget gate at each word: how much of its memory each word keeps."""
        return Figure(charts.mean_forget_chart, charts.mean_forget_data(trace))
