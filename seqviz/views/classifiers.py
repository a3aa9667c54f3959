"""Views of the email classifiers: each team's probability, and which words can move the decision."""

from __future__ import annotations

from seqviz import charts
from seqviz.views.base import View


class EmailClassifier(View):
    """P(team | sentence) for each model: the chapter's two emails, and the visitor's sentence."""

    name = "email-classifier"
    fits_text = "any email classifier"
    task = "emails"
    trace_kind = "classification"

    def requires(self, family):
        return not family.translates

    def trace(self, model, vocabularies, tokens):
        return model.trace(list(tokens), vocabularies["tokens"])  # seqviz.traces.ClassifierTrace

    def summary(self, trace) -> str:
        return f"It says {trace.predicted} ({float(trace.probs.max()):.0%})."

    figure_names = ("probabilities",)

    def draw(self, figure, traces, colours=None, title: str = "The sidebar sentence", **options):
        return [charts.make("probabilities", traces, title)]


class Saliency(View):
    """‖∂score/∂x_t‖ for every word: how much each word can still move the chosen team's score."""

    name = "saliency"
    fits_text = "any email classifier that autograd can read (not the bag of words)"
    task = "emails"
    trace_kind = "saliency"

    def requires(self, family):
        return not family.translates and not family.counts

    def trace(self, model, vocabularies, tokens):
        from seqviz.analysis.gradients import saliency

        return saliency(model, list(tokens), vocabularies["tokens"])

    figure_names = ("saliency",)

    def draw(self, figure, traces, colours=None, **options):
        return [charts.make("saliency", traces, colours)]
