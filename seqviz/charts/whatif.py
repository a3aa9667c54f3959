"""/what-if: a translator questioned. The next words it offered at one step, the tree of beam search's hypotheses,
and a map of encoder states with the visitor's sentence as a path (alignments are seqviz.charts.heatmaps')."""

from __future__ import annotations

import itertools

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.base import _on_canvas, position_labels, table
from seqviz.charts.colours import BLUE, GREEN, GREY, LABEL_GREY, ORANGE, PURPLE, SKY, VERMILLION, YELLOW
from seqviz.charts.figure import Figure, drawn, figure

# --- 1. The next word at one step ------------------------------------------------------------------------

GREEDY, SAMPLED, PASSED = "greedy's pick", "written (sampled)", "passed over"
PROBABILITY_FLOOR = 1e-6  # the log axis starts here; a smaller probability is drawn as this (its tooltip is exact)


def next_words_data(step) -> pd.DataFrame:
    """One row per word the model offered at a step (a seqviz.analysis.decoding.NextWord), most likely first, with
    the written word added when it was sampled from outside the top k."""
    words, probs = list(step.top_tokens), [float(p) for p in step.top_probs]
    if step.chosen not in words:
        words.append(step.chosen)
        probs.append(float(step.chosen_prob))
    status = [GREEDY if w == step.greedy else SAMPLED if w == step.chosen else PASSED for w in words]
    width = len(str(len(words)))
    return pd.DataFrame({"word": [f"{i + 1:>{width}}. {w}  {p:.3g}" for i, (w, p) in enumerate(zip(words, probs,
                                                                                                  strict=True))],
                         "token": words, "probability": probs, "drawn": np.maximum(probs, PROBABILITY_FLOOR),
                         "status": status})


def next_words_chart(title: str = "") -> alt.Chart:
    """The words offered at one step as bars on a log axis (a trained model gives its pick nearly all the
    probability: on a linear axis every other bar vanishes), greedy's pick and a sampled word in colour."""
    chart = alt.Chart(table()).mark_bar().encode(
        y=alt.Y("word:N", sort="ascending", title=None, axis=alt.Axis(labelOverlap=False, labelLimit=200)),
        x=alt.X("drawn:Q", title="p(next word), log scale",
                scale=alt.Scale(type="log", domain=[PROBABILITY_FLOOR, 1], clamp=True),
                axis=alt.Axis(format="~g", values=[1e-6, 1e-4, 1e-2, 1])),
        color=alt.Color("status:N", scale=alt.Scale(domain=[GREEDY, SAMPLED, PASSED], range=[BLUE, ORANGE, GREY]),
                        legend=alt.Legend(orient="bottom", title=None, columns=1)),
        tooltip=[alt.Tooltip("token:N", title="word"), alt.Tooltip("probability:Q", format=".4g"),
                 alt.Tooltip("status:N")],
    ).properties(height=alt.Step(22), width=220)
    return chart.properties(title=title) if title else chart


@figure("next-words")
def next_words(step, title: str = "") -> Figure:
    """The k most likely words at one output step, greedy's pick (and a sampled word) marked."""
    return drawn(next_words_chart, next_words_data(step), title=title)


# --- 2. Beam search's tree -----------------------------------------------------------------------------

BEST, KEPT, FINISHED, PRUNED = "best translation", "kept in the beam", "finished (<eos>)", "pruned"
LABEL_PX = 72  # room for a word beside its node ("remboursement" is cut with an ellipsis; its tooltip is whole)


def beam_tree_data(search, pruned_shown: int | None = None) -> pd.DataFrame:
    """One row per node of a seqviz.analysis.beam.BeamSearch's tree: its step, its rank among its step's
    continuations (by log-probability), its parent's, and whether the tree draws it: every kept node, and the
    ``pruned_shown`` best pruned ones of each step (None: the beam's width); the rest are in the table only."""
    pruned_shown = search.width if pruned_shown is None else pruned_shown
    rank, seen = {}, {}
    for node in search.nodes:  # nodes of a step come in order of their log-probability, best first
        rank[node.id] = seen.get(node.step, 0)
        seen[node.step] = rank[node.id] + 1
    best, node_id = set(), search.best.node if search.final else None
    while node_id is not None:
        best.add(node_id)
        node_id = search.nodes[node_id].parent
    kept_per_step = {}
    for node in search.nodes:
        if not node.pruned:
            kept_per_step[node.step] = kept_per_step.get(node.step, 0) + 1
    rows = []
    for node in search.nodes:
        status = BEST if node.id in best else PRUNED if node.pruned else FINISHED if node.finished else KEPT
        parent = search.nodes[node.parent] if node.parent is not None else node
        rows.append({"step": node.step, "rank": rank[node.id], "word": node.token, "log p": node.log_prob,
                     "status": status, "parent step": parent.step, "parent rank": rank[parent.id],
                     "drawn": not node.pruned or rank[node.id] < kept_per_step.get(node.step, 0) + pruned_shown,
                     "edge": node.parent is not None})
    return pd.DataFrame(rows)


def beam_tree_chart(title: str = "") -> alt.LayerChart:
    """The tree of hypotheses: output step left to right, each step's continuations top to bottom by
    log-probability; an edge from every word to the hypothesis it continues. Kept words in colour, the best
    translation's in vermillion, pruned ones grey. Each word is written with log p of its whole hypothesis."""
    x = alt.X("step:O", title="output step", scale=alt.Scale(type="point", padding=0.3),
              axis=alt.Axis(labelAngle=0, orient="top"))
    y = alt.Y("rank:O", title="continuations of the step, most likely first", scale=alt.Scale(type="point",
                                                                                               padding=0.6),
              axis=None)
    status = alt.Scale(domain=[BEST, KEPT, FINISHED, PRUNED], range=[VERMILLION, BLUE, GREEN, GREY])
    opacity = alt.condition(alt.datum.status == PRUNED, alt.value(0.5), alt.value(1.0))
    tooltip = [alt.Tooltip("word:N"), alt.Tooltip("step:O"), alt.Tooltip("log p:Q", format=".3f"),
               alt.Tooltip("status:N")]
    base = alt.Chart().encode(x=x, y=y)
    # An edge leaves its parent after the parent's label (x2Offset), so no line crosses a word or its log p.
    edges = base.mark_rule(strokeWidth=1.2, x2Offset=LABEL_PX + 6).encode(
        x2="parent step:O", y2="parent rank:O",
        color=alt.Color("status:N", scale=status, legend=alt.Legend(orient="bottom", title=None, columns=2)),
        opacity=opacity).transform_filter(alt.datum.edge)
    dots = base.mark_circle(size=60).encode(color=alt.Color("status:N", scale=status), opacity=opacity,
                                            tooltip=tooltip)
    words = base.mark_text(align="left", dx=6, dy=-6, fontSize=11, color=LABEL_GREY, limit=LABEL_PX).encode(
        text="word:N", opacity=opacity, tooltip=tooltip)
    scores = base.mark_text(align="left", dx=6, dy=8, fontSize=11, color=LABEL_GREY).encode(
        text=alt.Text("log p:Q", format=".2f"), opacity=opacity)
    chart = alt.layer(edges, dots, words, scores, data=table()).transform_filter(alt.datum.drawn).properties(
        width=alt.Step(LABEL_PX + 44), height=alt.Step(32))
    return chart.properties(title=title) if title else chart


@figure("beam-tree")
def beam_tree(search, title: str = "") -> Figure:
    """Beam search's tree of hypotheses, log-probabilities written, pruned branches grey."""
    return drawn(beam_tree_chart, beam_tree_data(search), title=title)


# --- 6. A map of encoder states ---------------------------------------------------------------------------

OUTSIDE = "outside the grammar"
PART_COLOURS = {"determiner": SKY, "adjective": ORANGE, "noun": BLUE, "pronoun": PURPLE, "verb": GREEN,
                "negation": "#882255", "question": YELLOW, "relative": "#CC6677", "connector": "#999933",
                "punctuation": "#44AA99", OUTSIDE: GREY}
COLOUR_BY = {"part": "the grammar's part", "position": "position in the sentence"}


# Where a path word's label goes beside its point: (dx, dy, align, baseline) of one text layer each. Vega-Lite sets
# these per mark, not per point, so each side is a layer of its own, drawing the points :func:`label_sides` sent it.
SIDES = {"right": (7, 0, "left", "middle"), "left": (-7, 0, "right", "middle"),
         "above": (0, -8, "center", "bottom"), "below": (0, 8, "center", "top"),
         "above right": (4, -5, "left", "bottom"), "below right": (4, 5, "left", "top"),
         "above left": (-4, -5, "right", "bottom"), "below left": (-4, 5, "right", "top")}
LABEL_FONT_PX, CHAR_PX = 11, 6.6  # the labels' font, and the width of one of its bold characters (about)
PLOT_PX = (290, 380)  # the plot on a 390 px phone (its narrowest): labels apart there are apart on a desktop too


def _label_box(x: float, y: float, side: str, chars: int) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) in pixels of a label of ``chars`` characters put on ``side`` of the point."""
    dx, dy, align, baseline = SIDES[side]
    width, height = chars * CHAR_PX, LABEL_FONT_PX + 2
    left = x + dx - {"left": 0, "right": width, "center": width / 2}[align]
    top = {"middle": y - height / 2, "bottom": y + dy - height, "top": y + dy}[baseline]
    return left, top, left + width, top + height


def _overlap(a, b) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def label_sides(points: np.ndarray, labels: list[str], extent: np.ndarray, plot_px=PLOT_PX) -> list[str]:
    """The side of its point each path label goes on (one of SIDES), so that labels cross neither each other, the
    path's points, nor the plot's edge, and the path's lines as little as they can: in the sentence's order, each
    takes the side (right first) whose box overlaps the least of these, the labels already placed and the points
    weighing 4 times a line (its segments sampled every 3 px). Measured on a phone's plot (``plot_px``), where
    labels are closest; ``extent`` (2, 2) is the axes' [min, max] of pc1 and pc2."""
    if not len(points):
        return []
    span = np.maximum(extent[:, 1] - extent[:, 0], 1e-9)
    px = np.column_stack([(points[:, 0] - extent[0, 0]) / span[0] * plot_px[0],
                          (extent[1, 1] - points[:, 1]) / span[1] * plot_px[1]])  # y grows downwards
    along = [a + (b - a) * f for a, b in itertools.pairwise(px)
             for f in np.linspace(0, 1, max(2, int(np.hypot(*(b - a)) // 3)))]
    dots = [(x - 4, y - 4, x + 4, y + 4) for x, y in px]
    line = [(x - 1, y - 1, x + 1, y + 1) for x, y in along]
    placed, sides = [], []
    for (x, y), label in zip(px, labels, strict=True):
        def cost(side: str, x=x, y=y, label=label) -> float:
            box = _label_box(x, y, side, len(label))
            outside = (max(0.0, -box[0]) + max(0.0, box[2] - plot_px[0]) + max(0.0, -box[1])
                       + max(0.0, box[3] - plot_px[1])) * 100
            return (outside + 4 * sum(_overlap(box, other) for other in [*placed, *dots])
                    + sum(_overlap(box, other) for other in line))

        side = min(SIDES, key=cost)  # (min keeps the first of equal costs: right first)
        placed.append(_label_box(x, y, side, len(label)))
        sides.append(side)
    return sides


def state_map_data(state_map, path) -> pd.DataFrame:
    """The held-out states (seqviz.analysis.state_map.StateMap) and the visitor's sentence's path through them
    (a SentencePath): one row per point, ``kind`` telling them apart, ``order`` the path's."""
    held = pd.DataFrame({"pc1": state_map.points[:, 0], "pc2": state_map.points[:, 1], "word": state_map.words,
                         "position": state_map.positions + 1, "part": [p or OUTSIDE for p in state_map.parts],
                         "kind": "held out", "order": 0, "label": "", "side": ""})
    labels = position_labels(path.tokens)
    every = np.concatenate([state_map.points, path.points]) if len(path.points) else state_map.points
    extent = np.column_stack([every.min(axis=0), every.max(axis=0)])
    yours = pd.DataFrame({"pc1": path.points[:, 0], "pc2": path.points[:, 1], "word": path.tokens,
                          "position": np.arange(1, len(path.tokens) + 1), "part": [p or OUTSIDE for p in path.parts],
                          "kind": "your sentence", "order": np.arange(len(path.tokens)), "label": labels,
                          "side": label_sides(path.points, labels, extent)})
    return pd.concat([held, yours], ignore_index=True)


def state_map_chart(colour_by: str = "part", axes: tuple[str, str] = ("PC 1", "PC 2"), title: str = ""
                    ) -> alt.LayerChart:
    """Held-out encoder states on the plane of their first two principal components, coloured by ``colour_by``
    ("part" or "position"), with the visitor's sentence drawn over them as a numbered path (a template of
    ``state_map_data``). It takes the page's width: a scatter needs no cell per word."""
    if colour_by not in COLOUR_BY:
        raise ValueError(f"colour_by must be one of {', '.join(COLOUR_BY)}, not {colour_by!r:.40}")
    x, y = alt.X("pc1:Q", title=axes[0]), alt.Y("pc2:Q", title=axes[1])
    colour = (alt.Color("part:N", scale=alt.Scale(domain=list(PART_COLOURS), range=list(PART_COLOURS.values())),
                        legend=alt.Legend(orient="bottom", title=None, columns=2)) if colour_by == "part" else
              alt.Color("position:Q", scale=alt.Scale(scheme="viridis"),
                        legend=alt.Legend(orient="bottom", title="position in the sentence")))
    tooltip = [alt.Tooltip("word:N"), alt.Tooltip("position:Q"), alt.Tooltip("part:N")]
    base = alt.Chart().encode(x=x, y=y)
    held = base.mark_circle(size=14, opacity=0.45).encode(color=colour, tooltip=tooltip).transform_filter(
        alt.datum.kind == "held out")
    yours = base.transform_filter(alt.datum.kind == "your sentence")
    path = yours.mark_line(color=VERMILLION, strokeWidth=2).encode(order="order:Q")
    dots = yours.mark_point(color=VERMILLION, size=50, filled=True, shape="diamond").encode(tooltip=tooltip)
    words = [yours.transform_filter(alt.datum.side == side).mark_text(
        align=align, baseline=baseline, dx=dx, dy=dy, fontSize=LABEL_FONT_PX, fontWeight="bold", color=VERMILLION
    ).encode(text="label:N", tooltip=tooltip) for side, (dx, dy, align, baseline) in SIDES.items()]
    chart = alt.layer(held, path, dots, *words, data=table()).properties(height=PLOT_PX[1])
    return _on_canvas(chart.properties(title=title) if title else chart,
                      f"{title or 'A map of encoder states'}: a scatter of held-out states and your sentence's path")


@figure("state-map")
def state_map(state_map, path, colour_by: str = "part", title: str = "") -> Figure:
    """PCA of held-out encoder states, coloured by part or position, the visitor's sentence as a path."""
    ratio = state_map.explained_variance_ratio
    axes = (f"PC 1 ({ratio[0]:.0%} of the variance)", f"PC 2 ({ratio[1]:.0%})")
    return drawn(state_map_chart, state_map_data(state_map, path), colour_by, axes, title=title)
