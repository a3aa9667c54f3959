"""A transformer classifier's self-attention, every layer and head."""

from __future__ import annotations

from seqviz import charts
from seqviz.views.base import View


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

    figure_names = ("attention-heads",)

    def draw(self, figure, traces, colours=None, **options):
        return [charts.make("attention-heads", t.tokens, t.weights) for t in traces.values()]
