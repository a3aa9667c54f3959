"""Tests written for mutmut's survivors in seqviz/queue_estimate.py (issue 28, scripts/mutation
seqviz/queue_estimate.py): every size in a run's shape, the pace of runs training now from their 5th step, and a
young run's end and a queued run's length taken from that pace."""

from __future__ import annotations

import pytest

from seqviz.queue_estimate import OVERHEAD_GUESS_S, Paces, Training, expected_starts, shape

LSTM = {"task": "emails", "family": "lstm", "embedding": 16, "hidden": 16, "heads": 4, "layers": 1, "batch_size": 64,
        "steps": 100}


@pytest.mark.parametrize("size", ["task", "family", "embedding", "hidden", "heads", "layers", "batch_size"])
def test_every_size_is_part_of_a_runs_shape(size):
    assert shape({**LSTM, size: "other"}) != shape(LSTM)


def test_the_pace_of_runs_training_now_counts_from_their_fifth_step():
    fifth = Training(LSTM, step=5, steps=100, trained_s=1.5, started_ago_s=2.0)  # 0.3 s a step
    fourth = Training(LSTM, step=4, steps=100, trained_s=1.2, started_ago_s=2.0)
    assert Paces([]).run_s(LSTM, [fifth]) == pytest.approx(0.3 * 100 + OVERHEAD_GUESS_S)
    assert Paces([]).run_s(LSTM, [fourth]) == pytest.approx(60.0 + OVERHEAD_GUESS_S)  # too early: the guess


def test_a_young_run_and_the_queue_take_the_pace_of_the_runs_training_now():
    older = Training(LSTM, step=20, steps=100, trained_s=4.0, started_ago_s=5.0)  # 0.2 s a step: 16 s + 2.5 left
    young = Training(LSTM, step=2, steps=100, trained_s=1.0, started_ago_s=3.0)  # its shape's 20 s + 5, 3 s gone
    starts = expected_starts([older, young], [LSTM, LSTM, LSTM], 2, Paces([]))
    assert starts == pytest.approx([18.5, 22.0, 18.5 + 25.0])


def test_a_wait_of_exactly_steady_from_s_is_smoothed_and_a_shorter_one_follows_the_estimate():
    from seqviz.queue_estimate import STEADY_FROM_S, STEADY_PER_S, steady

    now = 100.0
    assert steady((now - 1, now + STEADY_FROM_S), now + 50, now) == pytest.approx(now + STEADY_FROM_S * STEADY_PER_S)
    assert steady((now - 1, now + STEADY_FROM_S - 0.01), now + 50, now) == now + 50
