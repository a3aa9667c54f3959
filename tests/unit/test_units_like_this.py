"""Units like this (seqviz.analysis.units_like_this): the units on across a phrase, the held-out spans where they
are on too, bounded and read from the model's own gate replay; the view's figure and search."""

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from seqviz import limits, views, zoo
from seqviz.analysis.units_like_this import (
    HeldOutStates,
    Match,
    closest_units,
    held_out_states,
    matches,
    phrase,
    runs,
    search,
    units_on,
)
from seqviz.tasks import make_task
from seqviz.traces import LSTMGateTrace


def gate_trace(cell: np.ndarray, tokens: list[str] | None = None) -> LSTMGateTrace:
    zeros = np.zeros_like(cell)
    tokens = tokens or [f"w{t}" for t in range(cell.shape[0])]
    return LSTMGateTrace(tokens, zeros, zeros, zeros, zeros, cell, zeros)


# Four units over five words: unit 0 on everywhere, unit 1 on at words 1-3, unit 2 on at word 2 only, unit 3 never.
CELL = np.array([[2.0, 0.0, 0.0, -1.0],
                 [2.0, 1.5, 0.0, -1.0],
                 [2.0, 1.2, 3.0, -1.0],
                 [2.0, 1.8, 0.0, -1.0],
                 [2.0, 0.2, 0.0, -1.0]])


def test_the_units_on_across_a_phrase():
    trace = gate_trace(CELL)
    assert units_on(trace, 1, 3, 1.0) == [0, 1]  # the strongest (by its weakest word) first
    assert units_on(trace, 3, 1, 1.0) == [0, 1]  # the ends in either order
    assert units_on(trace, 2, 2, 1.0) == [2, 0, 1]
    assert units_on(trace, 1, 3, 1.2) == [0]  # unit 1 dips to 1.2 at word 2: not above
    assert units_on(trace, 0, 4, 2.0) == []  # "above": unit 0 sits at 2.0
    assert units_on(trace, -5, 99, 1.0) == [0]  # clamped into the sentence
    assert phrase(5, 9, -2) == (0, 4) and phrase(0, 0, 3) == (0, 0)
    assert closest_units(trace, 0, 4, 3) == [0, 1, 2]  # weakest states 2, 0, 0, -1 over the whole sentence
    assert closest_units(trace, 1, 3, 2) == [0, 1]


def test_runs_are_maximal_and_long_enough():
    on = np.array([True, True, False, True, True, True, False, True])
    assert runs(on, 1) == [(0, 1), (3, 5), (7, 7)]
    assert runs(on, 2) == [(0, 1), (3, 5)]
    assert runs(on, 3) == [(3, 5)]
    assert runs(np.zeros(4, bool), 1) == [] and runs(np.ones(3, bool), 3) == [(0, 2)]


def test_matches_need_every_unit_for_as_many_words_as_the_phrase():
    a = np.array([[2.0, 2.0], [2.0, 2.0], [0.0, 2.0], [3.0, 3.0], [3.0, 3.0], [3.0, 3.0]])  # runs 0-1 and 3-5
    b = np.array([[5.0, 0.0], [5.0, 5.0], [5.0, 5.0], [0.0, 0.0]])  # both on at 1-2 only
    held = HeldOutStates([list("abcdef"), list("wxyz")], [a, b])
    found = matches(held, [0, 1], 1.0, 2)
    # As long as the phrase first (strongest first among them), then the longer ones.
    assert [(m.tokens, m.start, m.end) for m in found] == [(list("wxyz"), 1, 2), (list("abcdef"), 0, 1),
                                                            (list("abcdef"), 3, 5)]
    assert found[0].strength == pytest.approx(5.0)
    assert [(m.start, m.end) for m in matches(held, [0, 1], 1.0, 3)] == [(3, 5)]
    assert [(m.start, m.end) for m in matches(held, [0], 4.0, 1)] == [(0, 2)]
    assert matches(held, [], 1.0, 1) == []  # no unit chosen: nothing matches


def test_a_match_is_marked_in_its_context():
    words = "one two three four five six seven eight nine ten eleven twelve".split()
    assert Match(words, 0, 1, 1.0).marked() == "⟦one two⟧ three four five six seven eight …"
    assert Match(words, 8, 11, 1.0).marked() == "… three four five six seven eight ⟦nine ten eleven twelve⟧"
    assert Match(words, 3, 3, 1.0).marked(context=2) == "… two three ⟦four⟧ five six …"


def test_search_says_what_it_found():
    held = HeldOutStates([list("abc"), list("xyz")], [np.full((3, 2), 2.0), np.zeros((3, 2))])
    found = search(held, [0, 1], 1.0, 2, shown=5)
    assert list(found.table.iloc[:, 0]) == ["⟦a b c⟧"]
    assert found.summary.startswith("1 of the 2 held-out sentences searched have a span of 2 or more words")
    assert "None of the 2 held-out sentences" in search(held, [0], 3.0, 1).summary
    assert search(held, [], 1.0, 1).summary.startswith("No unit stays above")


@pytest.mark.parametrize("name", ["lstm", "memory-lstm", "additive"])
def test_held_out_states_are_the_pages_gate_replay_and_bounded(name):
    checkpoint = zoo.load(name)
    task = make_task(checkpoint.task, vocabularies=checkpoint.vocabularies)
    held = held_out_states(checkpoint.model, task, limit=12)
    assert len(held) == 12
    view = views.get("units-like-this")
    for tokens, states in zip(held.sentences[::5], held.states[::5], strict=True):
        np.testing.assert_array_equal(states, view.trace(checkpoint.model, checkpoint.vocabularies, tokens).cell)
    assert len(set(map(tuple, held.sentences))) > 6  # spread over the held-out set, not one sentence again


def test_the_view_searches_at_most_the_limit_and_finds_the_phrase_itself():
    """The memory model's held-out set is larger than the limit: the view reads exactly the limit. A phrase of a
    held-out sentence, with its own units and threshold, matches in that very sentence."""
    checkpoint = zoo.load("memory-lstm")
    task = make_task(checkpoint.task, vocabularies=checkpoint.vocabularies)
    view = views.get("units-like-this")
    study = view.held_out(checkpoint.model, task)
    assert study["sentences"] == len(study["states"]) == limits.UNITS_LIKE_THIS_SENTENCES
    tokens = study["states"].sentences[40]
    trace = view.trace(checkpoint.model, checkpoint.vocabularies, tokens)
    threshold = 0.5
    units = view.units(trace, 1, 3, threshold)
    assert units
    found = view.search(study, trace, 1, 3, threshold)
    assert len(found.table) and all("⟦" in row for row in found.table.iloc[:, 0])
    every = matches(study["states"], units, threshold, 3)
    assert any(m.tokens is study["states"].sentences[40] and m.start <= 1 and m.end >= 3 for m in every)


def test_the_views_figure():
    view = views.get("units-like-this")
    trace = gate_trace(CELL, "the parcel never came .".split())
    figure, = view.figures({"m": trace}, None, None, start=3, end=1, threshold=1.0)
    assert figure.name == "units-like-this"
    assert sorted(set(figure.table["unit"])) == ["unit 00", "unit 01"]
    assert list(figure.table["in the phrase"][:5]) == [False, True, True, True, False]
    assert set(figure.table["threshold"]) == {1.0}
    validate_jsonschema(figure.make(*figure.args, **figure.kwargs).to_dict(validate=False), load_schema())
    closest, = view.figures({"m": trace}, None, None, start=0, end=4, threshold=2.5)  # no unit on: the closest
    assert list(dict.fromkeys(closest.table["unit"])) == ["unit 00", "unit 01", "unit 02", "unit 03"]
    assert "2 of the 4 units keep their cell state above 1" in view.summary(trace, 1, 3, 1.0)
    assert view.summary(trace, 0, 4, 2.5).startswith("No unit's cell state stays above 2.5 at every word of "
                                                     "“the parcel never came .”: drawn are the 4 that come closest")
    many = gate_trace(np.full((3, 30), 4.0))
    drawn, = view.figures({"m": many}, None, None, start=0, end=2, threshold=1.0)
    assert drawn.table["unit"].nunique() == limits.UNITS_LIKE_THIS_DRAWN
