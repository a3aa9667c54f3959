"""Views of recurrent models measured on held-out or random data: the memory's Jacobian, the memory task."""

from __future__ import annotations

from seqviz.views.base import View


class Recurrent(View):
    """‖∂h_T/∂h_k‖ on long random sequences (measured by seqviz.analysis.gradients.jacobian_curve)."""

    name = "recurrent"
    fits_text = "any recurrent classifier or memory model"
    needs_sentence = False

    def requires(self, family):
        return family.recurrent


class Memory(View):
    """Held-out accuracy against the distance to the word to remember, 1 to 60 steps back."""

    name = "memory"
    fits_text = "any model trained on the memory task"
    task = "memory"
    needs_sentence = False
    trace_kind = "memory"
    examples_per_distance = 24  # a /train snapshot: enough for a curve, a fraction of a second to measure

    def requires(self, family):
        return not family.translates

    def trace(self, model, vocabularies, tokens):
        """{"accuracy_by_distance": {"1": ..., "60": ...}, "chance": ...} on the first held-out sequences."""
        from seqviz.runs import shared_task

        task = shared_task("memory")
        by_distance = {str(distance): task.accuracy(model, examples[: self.examples_per_distance])[0]
                       for distance, examples in sorted(task.splits.test.items())}
        return {"accuracy_by_distance": by_distance, "chance": 1 / len(task.labels)}

    def summary(self, trace) -> str:
        at_20 = trace["accuracy_by_distance"].get("20")
        return f"Accuracy at distance 20: {at_20:.0%}." if at_20 is not None else ""

    figure_names = ("memory-accuracy",)

    def draw(self, figure, traces, colours=None, step: int | None = None, **options):
        from seqviz import charts

        metadata = {label: {"metrics": trace} for label, trace in traces.items()}
        chance = next(iter(traces.values()))["chance"]
        return [charts.make("memory-accuracy", metadata, colours, chance, step)]
