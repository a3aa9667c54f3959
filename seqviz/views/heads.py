"""A transformer classifier's self-attention, every layer and head."""

from __future__ import annotations

from seqviz import charts
from seqviz.views.base import Figure, View


class SelfAttention(View):
    """Word attending × word attended to, one heatmap per layer and head (rows add to 1)."""

    name = "self-attention"
    fits_text = "any transformer classifier"
    trace_kind = "self-attention"

    def requires(self, family):
        return family.heads and not family.translates

    def trace(self, model, vocabularies, tokens):
        return model.attention_trace(list(tokens), vocabularies["tokens"])  # seqviz.traces.SelfAttentionTrace

    def summary(self, trace) -> str:
        return f"Its {trace.weights.shape[0]} layers × {trace.weights.shape[1]} heads:"

    def figures(self, traces, colours=None, **options):
        return [Figure(charts.attention_heads_chart, charts.attention_heads_data(t.tokens, t.weights),
                       (charts.heads_cell_px(len(t.tokens)),)) for t in traces.values()]
