"""Is attention an explanation? Views that set a model's attention beside what its output depended on.

For one output (a translator's word y_t, a classifier's team ŷ) and each input word j, three numbers:

- attention α_j, what the model's weights show;
- gradient saliency ‖∂ log p(output) / ∂e_j‖, how fast the output's log-probability moves with word j's vector;
- leave-one-out, log p(output) − log p(output | word j replaced by <unk>), what removing the word costs.

Kendall's τ between attention and each of the other two says whether attention ranks the words as the
output's own sensitivity does (Jain and Wallace 2019). Held out, over many outputs, and with the weights
replaced (uniform, or the model's own shuffled over the words), the views also ask whether the output depends
on the weights at all (Wiegreffe and Pinter 2019). Numbers come from seqviz.analysis.explain.
"""

from __future__ import annotations

from seqviz import charts, limits
from seqviz.views.base import View
from seqviz.views.translation import Translator


def _taus_figure(held_out: dict[str, dict], colours: dict[str, str], unit: str):
    """The held-out τ histograms of several models (label -> the view's held_out()), one τ per ``unit``."""
    taus = {label: {"attention vs gradient": h["taus"].gradient,
                    "attention vs leave-one-out": h["taus"].leave_one_out} for label, h in held_out.items()}
    return charts.make("taus", taus, colours, unit)


def _tau(value) -> str:
    return "undefined" if value is None else f"{value:+.2f}"


class ExplainTranslation(Translator):
    """A translator with attention: the three measures for each output word of the sentence."""

    name = "explain-translation"
    fits_text = "any translator with attention"
    trace_kind = "explain-translation"

    def requires(self, family):
        return family.translates and family.attends

    def trace(self, model, vocabularies, tokens, max_len: int | None = None):
        from seqviz.analysis.explain import explain_translation

        return explain_translation(model, vocabularies, list(tokens), max_len)  # TranslationExplanation

    def summary(self, trace) -> str:
        return (f"Mean τ over the sentence: attention vs gradient {_tau(trace.mean_tau_gradient)}, "
                f"attention vs leave-one-out {_tau(trace.mean_tau_leave_one_out)}.")

    figure_names = ("importance", "taus", "attention-replaced")

    def draw(self, figure, traces, colours=None, step: int = 0, **options):
        """"importance": the measures for output word ``step`` (the last one, past the end) of each translator;
        "taus" and "attention-replaced": the held-out studies (label -> held_out())."""
        if figure == "taus":
            return [_taus_figure(traces, colours, "output words")]
        if figure == "attention-replaced":
            return [charts.make("attention-replaced", {label: h["exact_match"] for label, h in traces.items()})]
        figures = []
        for label, t in traces.items():
            if t.out_tokens:
                u = min(step, len(t.out_tokens) - 1)
                figures.append(charts.make("importance", t.src_tokens, t.attention[u], t.gradient[u],
                                           t.leave_one_out[u]).of(label))
        return figures

    def held_out(self, model, task) -> dict:
        """τ per output word over held-out sentences, and exact match with the weights replaced (bounded by
        seqviz.limits.EXPLAIN_HELD_OUT_SENTENCES)."""
        from seqviz.analysis.explain import ABLATIONS, held_out_exact_match, held_out_taus

        n = limits.EXPLAIN_HELD_OUT_SENTENCES
        taus = held_out_taus(model, task, limit=n)
        matches = {ablation: held_out_exact_match(model, task, ablation, limit=n) for ablation in ABLATIONS}
        return {"taus": taus, "exact_match": {a: m.exact_match for a, m in matches.items()}, "sentences": n}


class AttentionReplaced(Translator):
    """The sentence translated with the model's own attention, with uniform weights, and with its own weights
    shuffled over the source words: {"none": words, "uniform": words, "permuted": words}."""

    name = "attention-replaced"
    fits_text = "any translator with attention"
    trace_kind = "attention-replaced"

    def requires(self, family):
        return family.translates and family.attends

    def trace(self, model, vocabularies, tokens, max_len: int | None = None):
        from seqviz.analysis.explain import ABLATIONS, translate_with

        return {ablation: translate_with(model, vocabularies, list(tokens), ablation, max_len=max_len)
                for ablation in ABLATIONS}


class ExplainClassifier(View):
    """An email classifier that attends: the three measures for each word of an email, for its chosen team."""

    name = "explain-classifier"
    fits_text = "any email classifier that attends (the attention-pooled LSTM, the transformer)"
    task = "emails"
    trace_kind = "explain-classifier"

    def requires(self, family):
        return family.attends and not family.translates

    def trace(self, model, vocabularies, tokens):
        from seqviz.analysis.explain import explain_classification

        return explain_classification(model, vocabularies["tokens"], list(tokens))  # ClassificationExplanation

    def summary(self, trace) -> str:
        return (f"It says {trace.predicted} (p = {trace.p_predicted:.5f}); τ against the gradient "
                f"{_tau(trace.tau_gradient)}, against leave-one-out {_tau(trace.tau_leave_one_out)}.")

    figure_names = ("importance", "taus")

    def draw(self, figure, traces, colours=None, title: str = "", **options):
        """"importance": the measures for each email (label -> trace); "taus": the held-out studies."""
        if figure == "taus":
            return [_taus_figure(traces, colours, "emails")]
        return [charts.make("importance", t.tokens, t.attention, t.gradient, t.leave_one_out, title).of(label)
                for label, t in traces.items()]

    def held_out(self, model, task) -> dict:
        """τ per held-out email; for attention that pools the words into one vector (no heads), Jain and Wallace's
        permutation test too (bounded by seqviz.limits.EXPLAIN_HELD_OUT_EMAILS and EXPLAIN_PERMUTATIONS)."""
        from seqviz import families
        from seqviz.analysis.explain import held_out_classifier_taus, permutation_test
        from seqviz.models import family_of

        n = limits.EXPLAIN_HELD_OUT_EMAILS
        pooled = not families.get(family_of(model)).heads
        return {"taus": held_out_classifier_taus(model, task, limit=n), "emails": n,
                "permutation": permutation_test(model, task, limit=n, permutations=limits.EXPLAIN_PERMUTATIONS)
                if pooled else None}


class Pronoun(View):
    """Where "it" looks in every layer and head of a transformer classifier, beside what the decision rests on."""

    name = "pronoun"
    fits_text = "any transformer email classifier"
    task = "emails"
    trace_kind = "pronoun"

    def requires(self, family):
        return family.heads and not family.translates

    def trace(self, model, vocabularies, tokens, word: str = "it"):
        from seqviz.analysis.explain import pronoun_attention

        return pronoun_attention(model, vocabularies["tokens"], list(tokens), word)  # PronounAttention or None

    figure_names = ("pronoun",)

    def draw(self, figure, traces, colours=None, **options):
        """For each model: where the word looks in every head, then what the decision rests on."""
        figures = []
        for label, t in traces.items():
            if t is not None:
                d = t.decision
                figures += [charts.make("pronoun", t.tokens, t.weights, t.word).of(f"{label}-heads"),
                            charts.make("importance", d.tokens, None, d.gradient, d.leave_one_out,
                                        f"What the decision ({d.predicted}) rests on").of(f"{label}-decision")]
        return figures
