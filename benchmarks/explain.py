"""/explain's work, measured: the three importance measures of a typed sentence against /attention's trace of
it, and each model's held-out study (τ distributions, attention replaced, the permutation test), which the page
computes once per model and server (bounded by seqviz.limits).

The browser's own typing-to-painted figures for /explain and /attention are in the "typing" section
(benchmarks/browser.py); this section says where the server's time goes.
"""

from __future__ import annotations

import statistics
import time

from benchmarks.report import table

SENTENCES = (
    "The parcel arrived, but never the charger that was supposed to be in it.",
    "where is my order ?",
    "my red phone never arrived .",
)
GOAL = "the per-sentence work of /explain within 2x of /attention's typing-to-painted time (the typing section)"


def _median_seconds(work, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def measure(quick: bool = False) -> dict:
    from seqviz import story, views, zoo
    from seqviz.runtime import configure_torch
    from seqviz.tasks import make_task
    from seqviz.text import prepare
    from seqviz.tracing import trace

    configure_torch()
    repeats = 3 if quick else 7
    per_sentence = []
    for name in story.models("explain-translation"):
        checkpoint = zoo.load(name)
        for sentence in SENTENCES:
            tokens = prepare(sentence).tokens
            trace(checkpoint, "explain-translation", tokens)  # warm
            per_sentence.append({
                "model": name, "sentence": sentence,
                "attention trace ms": 1000 * _median_seconds(lambda c=checkpoint, t=tokens: trace(c, "alignment", t),
                                                             repeats),
                "three measures ms": 1000 * _median_seconds(
                    lambda c=checkpoint, t=tokens: trace(c, "explain-translation", t), repeats),
            })
    studies = []
    for view, key in (("explain-translation", "explain-translation"), ("explain-classifier", "explain-classifier")):
        for name in story.models(key):
            checkpoint = zoo.load(name)
            task = make_task(checkpoint.task, vocabularies=checkpoint.vocabularies)
            began = time.perf_counter()
            views.get(view).held_out(checkpoint.model, task)
            studies.append({"model": name, "view": view, "held-out study s": time.perf_counter() - began})
    return {"per_sentence": per_sentence, "held_out": studies, "goal": GOAL}


def markdown(figures: dict) -> str:
    rows = figures["per_sentence"]
    extra = statistics.median(r["three measures ms"] - r["attention trace ms"] for r in rows)
    return "\n\n".join([
        "## /explain: attention beside gradient and leave-one-out",
        "Per typed sentence, each default translator's trace as /attention computes it, and the three measures "
        f"(/explain's work, a gradient pass and a leave-one-out pass): the measures add a median {extra:.0f} "
        "ms per model. Goal: " + figures["goal"] + "; the typing section has both pages' figures.",
        table(rows),
        "Held-out studies, once per model and server (seqviz.limits.EXPLAIN_HELD_OUT_SENTENCES, "
        "EXPLAIN_HELD_OUT_EMAILS, EXPLAIN_PERMUTATIONS), the task's data already built (the first study of a task "
        "on a server builds it too, a few seconds): a visitor's model pays the same, once, with a spinner.",
        table(figures["held_out"]),
    ])
