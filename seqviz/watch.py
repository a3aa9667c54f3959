"""Watch a model learn: what a training run keeps of the model's view of one sentence, every few seconds.

:func:`snapshot_fn` returns the function a run calls on its model (under ``torch.inference_mode()``, in the
training thread): for a translator its translation and alignment, for an LSTM classifier its gates, for a
transformer classifier its attention heads, for any other classifier its class probabilities, and for a
memory model its held-out accuracy against distance. A snapshot is a small frozen value: it is kept, and
drawn later by the page, long after the model has changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Held-out sequences per distance in a memory snapshot: enough for a curve that says where the model
# stands, few enough that a snapshot costs a fraction of a second.
MEMORY_SNAPSHOT_EXAMPLES = 24


@dataclass(frozen=True)
class Snapshot:
    kind: str  # "translation", "gates", "heads", "probabilities" or "memory"
    trace: Any  # the trace the pages draw (TranslationTrace, LSTMGateTrace, ...), or for memory a dict
    summary: str  # one line for people: the translation, the predicted class, the accuracy at 20


def snapshot_fn(task, tokens: list[str] | tuple[str, ...], model_kind: Any) -> Callable[[Any], Snapshot] | None:
    """The snapshot function for a run of ``model_kind`` (the model class) on ``task`` with these tokens.

    None when there is nothing to show (no tokens, and not the memory task, which needs none).
    """
    tokens = list(tokens)
    if task.name == "memory":
        return _memory_snapshot(task)
    if not tokens:
        return None
    if hasattr(model_kind, "translate"):
        src, tgt = task.vocabularies["src"], task.vocabularies["tgt"]

        def translation(model) -> Snapshot:
            trace = model.trace(src.encode(tokens), src, tgt)
            return Snapshot("translation", trace, " ".join(trace.out_tokens) or "(nothing yet)")

        return translation
    vocab = task.vocabularies["tokens"]
    if hasattr(model_kind, "gate_trace"):

        def gates(model) -> Snapshot:
            trace = model.gate_trace(tokens, vocab)
            return Snapshot("gates", trace, f"mean forget gate {float(trace.forget_gate.mean()):.2f}")

        return gates
    if hasattr(model_kind, "attention_trace"):

        def heads(model) -> Snapshot:
            trace = model.attention_trace(tokens, vocab)
            return Snapshot("heads", trace, f"{trace.weights.shape[0]} layers × {trace.weights.shape[1]} heads")

        return heads

    def probabilities(model) -> Snapshot:
        trace = model.trace(tokens, vocab)
        return Snapshot("probabilities", trace, f"{trace.predicted} ({float(trace.probs.max()):.0%})")

    return probabilities


def _memory_snapshot(task) -> Callable[[Any], Snapshot]:
    examples = {distance: items[:MEMORY_SNAPSHOT_EXAMPLES] for distance, items in sorted(task.splits.test.items())}
    chance = 1 / len(task.labels)

    def memory(model) -> Snapshot:
        by_distance = {str(d): task.accuracy(model, items)[0] for d, items in examples.items()}
        at_20 = by_distance.get("20")
        summary = f"accuracy at distance 20: {at_20:.0%}" if at_20 is not None else ""
        return Snapshot("memory", {"accuracy_by_distance": by_distance, "chance": chance}, summary)

    return memory
