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


class Neurons(View):
    """BertViz's neuron view of a transformer classifier: for one layer, head and query word, q, every k_j, their
    products, the scores q·k_j/√d_k and the softmax (seqviz.analysis.neurons)."""

    name = "neurons"
    fits_text = "any transformer classifier"
    trace_kind = "neurons"

    def requires(self, family):
        return family.heads and not family.translates

    def trace(self, model, vocabularies, tokens):
        from seqviz.analysis.neurons import neuron_trace

        return neuron_trace(model, list(tokens), vocabularies["tokens"])  # NeuronTrace

    def summary(self, trace, layer: int = 0, head: int = 0, query: int = 0) -> str:
        """The three steps of this head for this word, in words, from its own numbers."""
        from seqviz.analysis.neurons import summary

        return summary(trace.step(layer, head, query))

    figure_names = ("neuron-vectors", "neuron-scores", "neuron-mix")

    def draw(self, figure, traces, colours=None, layer: int = 0, head: int = 0, query: int = 0, **options):
        """"neuron-vectors": q, every k_j and their products; "neuron-scores": q·k_j, ÷√d_k and the softmax;
        "neuron-mix": every v_j and Σ_j α_j v_j; each for layer ``layer``, head ``head`` and query word ``query``
        (0-based) of each trace."""
        return [charts.make(figure, t.step(layer, head, query)) for t in traces.values()]
