"""A waiting run's expected start moves steadily (seqviz.queue_estimate.steady, issue 27: no jump of more than 2x
between two refreshes): at most STEADY_PER_S a second against the start shown last, whatever the new estimate."""

from __future__ import annotations

import pytest

from seqviz.queue_estimate import STEADY_FROM_S, STEADY_PER_S, steady

NOW = 1_000_000.0


def test_a_first_estimate_is_shown_as_it_is():
    assert steady(None, NOW + 300.0, NOW) == NOW + 300.0


@pytest.mark.parametrize("estimate_left", [5.0, 20.0, 600.0])
def test_a_jump_is_spread_over_the_seconds_that_follow(estimate_left):
    shown = (NOW - 2.0, NOW + 60.0)  # shown 2 s ago: a start 60 s from now
    left = steady(shown, NOW + estimate_left, NOW) - NOW
    left_then = 60.0
    assert left_then / STEADY_PER_S ** 2 - 1e-9 <= left <= left_then * STEADY_PER_S ** 2 + 1e-9
    assert left == pytest.approx(min(max(estimate_left, left_then / STEADY_PER_S ** 2), left_then * STEADY_PER_S ** 2))


def test_an_estimate_within_the_band_is_shown_as_it_is():
    assert steady((NOW - 1.0, NOW + 100.0), NOW + 101.0, NOW) == NOW + 101.0


def test_reading_often_moves_it_no_faster_than_reading_once():
    """Thirty pages reading every 0.1 s move it by STEADY_PER_S a second, as one page reading once a second."""
    shown, now = (NOW, NOW + 100.0), NOW
    for _ in range(50):  # 5 s of reads, the estimate stuck at 10 s
        now += 0.1
        shown = (now, steady(shown, now + 10.0, now))
    moved = (100.0 - 5.0) / (shown[1] - now)  # against the first start's wait left now
    assert 1.5 < moved < 1.85 < 2.0  # it moves, about STEADY_PER_S ** 5 (1.76), under 2x over five seconds


def test_a_short_wait_follows_the_estimate_at_once():
    """Under STEADY_FROM_S left (or the start shown has passed), the new estimate is shown as it is."""
    assert steady((NOW - 1.0, NOW + STEADY_FROM_S - 1.0), NOW + 40.0, NOW) == NOW + 40.0
    assert steady((NOW - 30.0, NOW - 3.0), NOW + 40.0, NOW) == NOW + 40.0
