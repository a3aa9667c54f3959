"""/what-if's map of states labels the visitor's path so that it can be read: on a phone's plot no two labels
overlap, no label leaves the plot, and a label stays off the path's points (seqviz.charts.whatif.label_sides)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from seqviz.charts.base import position_labels
from seqviz.charts.whatif import PLOT_PX, SIDES, _label_box, _overlap, label_sides

EXTENT = np.array([[-5.0, 5.0], [-5.0, 4.0]])


def boxes(points, labels):
    sides = label_sides(points, labels, EXTENT)
    assert set(sides) <= set(SIDES)
    span = EXTENT[:, 1] - EXTENT[:, 0]
    px = [((x - EXTENT[0, 0]) / span[0] * PLOT_PX[0], (EXTENT[1, 1] - y) / span[1] * PLOT_PX[1]) for x, y in points]
    return [_label_box(x, y, side, len(label)) for (x, y), side, label in zip(px, sides, labels, strict=True)], px


@pytest.mark.parametrize("seed", range(5))
def test_a_paths_labels_do_not_overlap_on_a_phone(seed):
    rng = np.random.default_rng(seed)
    points = rng.uniform([-4, -4], [4, 3], size=(8, 2))
    labels = position_labels(["the", "small", "box", "was", "delivered", "and", "then", "."])
    placed, px = boxes(points, labels)
    for a, b in itertools.combinations(placed, 2):
        assert _overlap(a, b) == 0, (a, b)
    for box in placed:
        assert box[0] >= 0 and box[2] <= PLOT_PX[0] and box[1] >= 0 and box[3] <= PLOT_PX[1]
        assert not any(box[0] <= x <= box[2] and box[1] <= y <= box[3] for x, y in px), "a label covers a point"


def test_two_words_at_one_place_are_labelled_on_different_sides_and_an_edge_point_inwards():
    points = np.array([[0.0, 0.0], [0.01, 0.0], [4.9, 1.0]])
    sides = label_sides(points, position_labels(["arrived", ".", "watch"]), EXTENT)
    assert sides[0] != sides[1]
    assert sides[2] != "right", "a label at the right edge would leave the plot"
    assert label_sides(np.zeros((0, 2)), [], EXTENT) == []
