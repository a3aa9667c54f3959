"""Views of translators: what each writes, where it looked for each word, and one step of its attention."""

from __future__ import annotations

from seqviz import charts
from seqviz.views.base import View


class Translator(View):
    """The greedy translation of the sentence (seqviz.traces.TranslationTrace or TransformerTranslationTrace)."""

    name = "translator"
    fits_text = "any translator"
    trace_kind = "translation"

    def requires(self, family):
        return family.translates

    def trace(self, model, vocabularies, tokens, max_len: int | None = None):
        """At most ``max_len`` words (None: seqviz.limits.output_limit of the sentence's length)."""
        src, tgt = vocabularies["src"], vocabularies["tgt"]
        return model.trace(src.encode(list(tokens)), src, tgt, max_len=max_len)

    def summary(self, trace) -> str:
        return "It writes: " + (" ".join(trace.out_tokens) or "(nothing yet)")


class Alignment(Translator):
    """Output word × source word: where the decoder looked for each word it wrote (rows add to 1)."""

    name = "alignment"
    fits_text = "any translator with attention"

    def requires(self, family):
        return family.translates and family.attends

    figure_names = ("alignment",)

    def draw(self, figure, traces, colours=None, title: str = "{label}: output word (row) × source word (column)",
             **options):
        return [charts.make("alignment", t.src_tokens, t.out_tokens, t.alignment, title.format(label=label)).of(label)
                for label, t in traces.items() if t.out_tokens]


class AttentionStep(Translator):
    """One decoder step read like the worked example: ① the scores, ② the softmax weights, ③ the context."""

    name = "attention-step"
    fits_text = "any LSTM translator whose attention part scores the source words"

    def requires(self, family):
        return family.attends and family.attention_part is not None

    figure_names = ("attention-step",)

    def draw(self, figure, traces, colours=None, step: int = 0, **options):
        """The step that wrote output word ``step`` (the last one, past the end), for each translator."""
        return [charts.make("attention-step", t.steps[min(step, len(t.steps) - 1)], t.src_tokens, t.score_rule)
                for t in traces.values() if t.steps]


class CrossAttention(Translator):
    """A transformer translator's cross-attention, every layer and head: French word written × English word."""

    name = "cross-attention"
    fits_text = "any transformer translator"

    def requires(self, family):
        return family.translates and family.heads

    figure_names = ("attention-heads",)

    def draw(self, figure, traces, colours=None, **options):
        return [charts.make("attention-heads", t.src_tokens, t.cross, t.out_tokens, row_title="French word written",
                            col_title="English word") for t in traces.values() if t.out_tokens]
