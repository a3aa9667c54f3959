"""Measured results: held-out comparisons from the zoo's metadata (JSON only, no torch), training throughput,
and forward time measured on this machine."""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts.base import MODEL_LABEL_PX, model_legend, table
from seqviz.charts.colours import BLUE, GREY, LABEL_GREY, ORANGE, VERMILLION, model_colours
from seqviz.charts.figure import Figure, drawn, figure


def twins_data(metadata: dict[str, dict], colours: dict[str, str]) -> pd.DataFrame:
    rows = []
    for name in colours:
        metrics = metadata[name]["metrics"]
        rows.append({"model": name, "held-out set": "test emails", "accuracy": metrics["test_accuracy"]})
        rows.append({"model": name, "held-out set": "word-identical twins", "accuracy": metrics["twins_accuracy"]})
    return pd.DataFrame(rows)


def twins_chart(metadata: dict[str, dict], colours: dict[str, str]) -> alt.Chart:
    names = list(colours)
    data = twins_data(metadata, colours)
    base = alt.Chart(data).encode(
        y=alt.Y("model:N", sort=names, title=None, axis=alt.Axis(labelLimit=MODEL_LABEL_PX, labelOverlap=False)),
        x=alt.X("accuracy:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="accuracy"),
        yOffset=alt.YOffset("held-out set:N"),
        color=alt.Color("held-out set:N", scale=alt.Scale(range=[BLUE, ORANGE]),
                        legend=alt.Legend(orient="bottom", title=None, labelLimit=MODEL_LABEL_PX)),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("held-out set:N"), alt.Tooltip("accuracy:Q", format=".1%")],
    )
    text = base.mark_text(align="left", dx=3, fontSize=11).encode(text=alt.Text("accuracy:Q", format=".1%"),
                                                                   color=alt.value(LABEL_GREY))
    chance = alt.Chart(pd.DataFrame({"x": [0.5], "label": ["50%: one of each twin pair"]})).mark_rule(
        strokeDash=[4, 4], color=GREY).encode(x="x:Q", tooltip=[alt.Tooltip("label:N", title="")])
    return alt.layer(base.mark_bar(), text, chance).properties(  # a step per model: see probabilities_chart
        height=alt.Step(44), title="Held-out accuracy: ordinary emails and word-identical twins")


def memory_curve(meta: dict, step: int | None = None) -> dict[str, float]:
    """Accuracy by distance of a memory model after ``step`` training steps (None, or a model measured only
    when its training ended, as a visitor's: its final accuracy)."""
    metrics = meta["metrics"]
    if step is None or not metrics.get("learning_curve"):
        return metrics["accuracy_by_distance"]
    for point in metrics.get("learning_curve", []):
        if point["step"] == step:
            return point["accuracy_by_distance"]
    raise KeyError(f"no measurement after {step} steps")


def memory_data(metadata: dict[str, dict], colours: dict[str, str], step: int | None = None) -> pd.DataFrame:
    rows = []
    for name in colours:
        for distance, accuracy in memory_curve(metadata[name], step).items():
            rows.append({"model": name, "distance": int(distance), "accuracy": accuracy})
    return pd.DataFrame(rows)


def memory_accuracy_chart(colours: dict[str, str], chance: float) -> alt.LayerChart:
    """Held-out accuracy against distance, a line per model (a template of ``memory_data``), with chance and
    the chapter's twenty steps marked."""
    names = list(colours)
    base = alt.Chart().encode(
        x=alt.X("distance:Q", title="distance: words between the first word and the answer"),
        y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="held-out accuracy"),
        color=alt.Color("model:N", sort=names, scale=model_colours(colours), legend=model_legend()),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("distance:Q"), alt.Tooltip("accuracy:Q", format=".1%")],
    )
    marks = pd.DataFrame({"x": [20], "y": [chance], "label": [f"chance {chance:.1%}"]})
    rule20 = alt.Chart(marks).mark_rule(strokeDash=[4, 4], color=GREY).encode(
        x="x:Q", tooltip=[alt.Tooltip("x:Q", title="the chapter's twenty steps back")])
    chance_rule = alt.Chart(marks).mark_rule(strokeDash=[2, 2], color=GREY).encode(
        y=alt.Y("y:Q", title=None), tooltip=[alt.Tooltip("label:N", title="guessing")])
    chance_text = alt.Chart(marks).mark_text(align="left", dx=4, dy=-6, color=GREY).encode(
        x=alt.value(4), y=alt.Y("y:Q", title=None), text="label:N")
    return alt.layer(alt.layer(base.mark_line(strokeWidth=2.5), data=table()), rule20, chance_rule,
                     chance_text).properties(
        height=300, title="Remember the first word: held-out accuracy against distance")


def translation_by_length_data(metadata: dict[str, dict], colours: dict[str, str]) -> pd.DataFrame:
    rows = []
    for name in colours:
        for bucket, values in metadata[name]["metrics"]["buckets"].items():
            lo, hi = (int(x) for x in bucket.split("-"))
            for metric in ("exact_match", "token_accuracy"):
                if values.get(metric) is not None:
                    rows.append({"model": name, "source length": bucket, "middle": (lo + hi) / 2,
                                 "metric": metric.replace("_", " "), "value": values[metric], "n": values["n"]})
    return pd.DataFrame(rows)


def translation_by_length_chart(metadata: dict[str, dict], colours: dict[str, str], metric: str = "exact match"):
    names = list(colours)
    data = translation_by_length_data(metadata, colours)
    data = data[data["metric"] == metric]
    limit = metadata[names[0]]["metrics"]["max_train_src_len"]
    base = alt.Chart(data).encode(
        x=alt.X("middle:Q", title="source sentence length (tokens, bucket middle)"),
        y=alt.Y("value:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title=metric),
        color=alt.Color("model:N", sort=names, scale=model_colours(colours), legend=model_legend()),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("source length:N"), alt.Tooltip("value:Q", format=".1%"),
                 alt.Tooltip("n:Q", title="sentences")],
    )
    rule = alt.Chart(pd.DataFrame({"x": [limit + 0.5], "label": [f"longest training sentence: {limit} tokens"]}))
    limit_marks = rule.mark_rule(strokeDash=[5, 4], color=GREY).encode(
        x="x:Q", tooltip=[alt.Tooltip("label:N", title="")]) + rule.mark_text(
        align="right", dx=-6, color=GREY).encode(x="x:Q", y=alt.datum(0.05), text="label:N")
    return alt.layer(base.mark_line(strokeWidth=2.5), base.mark_point(filled=True, size=45), limit_marks).properties(
        height=320, title=f"Held-out {metric} against source length")


def throughput_data(metadata: dict[str, dict], names: list[str]) -> pd.DataFrame:
    rows = []
    for name in names:
        meta = metadata[name]
        sentences = meta["steps"] * meta["train"]["batch_size"]
        rows.append({"model": name, "training seconds": meta["train_seconds"], "steps": meta["steps"],
                     "sentence pairs per second": sentences / meta["train_seconds"]})
    return pd.DataFrame(rows)


def throughput_chart(metadata: dict[str, dict], names: list[str]) -> alt.Chart:
    data = throughput_data(metadata, names)
    base = alt.Chart().encode(
        y=alt.Y("model:N", sort=names, title=None, axis=alt.Axis(labelLimit=220)),
        x=alt.X("sentence pairs per second:Q", title="sentence pairs per second (one thread)",
                scale=alt.Scale(domainMax=float(data["sentence pairs per second"].max()) * 1.15)),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("sentence pairs per second:Q", format=".0f"),
                 alt.Tooltip("training seconds:Q", format=".0f"), alt.Tooltip("steps:Q")],
    )
    return alt.layer(base.mark_bar(color=BLUE), base.mark_text(align="left", dx=3, color=LABEL_GREY).encode(
        text=alt.Text("sentence pairs per second:Q", format=".0f")), data=data).properties(
        height=40 * len(names), title="Training throughput of the shipped translators, measured here")


def timing_data(rows) -> pd.DataFrame:
    return pd.DataFrame([{"sequence length T": r.length, "layer": r.layer, "milliseconds": r.milliseconds}
                         for r in rows])


def timing_chart(rows) -> alt.Chart:
    data = timing_data(rows)
    base = alt.Chart().encode(
        x=alt.X("sequence length T:Q", scale=alt.Scale(type="log", base=2), title="sequence length T (log scale)"),
        y=alt.Y("milliseconds:Q", scale=alt.Scale(type="log"), title="forward time, ms (log scale)"),
        color=alt.Color("layer:N", scale=alt.Scale(range=[VERMILLION, BLUE]),
                        legend=alt.Legend(orient="bottom", title=None, labelLimit=400, columns=1)),
        tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("sequence length T:Q"),
                 alt.Tooltip("milliseconds:Q", format=".2f")],
    )
    return alt.layer(base.mark_line(), base.mark_point(filled=True, size=50), data=data).properties(
        height=300, title="Forward time of one layer on a batch of 8, measured on this machine")


@figure("order-twins")
def order_twins(metadata: dict[str, dict], colours: dict[str, str]) -> Figure:
    """Each email classifier's accuracy on the held-out twins (same words, another order)."""
    return drawn(twins_chart, twins_data(metadata, colours), metadata, colours)


@figure("memory-accuracy")
def memory_accuracy(metadata: dict[str, dict], colours: dict[str, str], chance: float,
                    step: int | None = None) -> Figure:
    """Accuracy at recalling a token against the distance it was seen, one line per model."""
    return drawn(memory_accuracy_chart, memory_data(metadata, colours, step), colours, chance)


@figure("translation-by-length")
def translation_by_length(metadata: dict[str, dict], colours: dict[str, str], metric: str = "exact match") -> Figure:
    """Held-out translation quality against the source's length, one line per translator."""
    return drawn(translation_by_length_chart, translation_by_length_data(metadata, colours), metadata, colours,
                 metric)


@figure("throughput")
def throughput(metadata: dict[str, dict], names: list[str]) -> Figure:
    """Training throughput of the named models."""
    return drawn(throughput_chart, throughput_data(metadata, names), metadata, names)


@figure("layer-timing")
def layer_timing(rows) -> Figure:
    """An LSTM layer's forward time against a self-attention layer's, by sequence length."""
    return drawn(timing_chart, timing_data(rows), rows)
