"""Tests written for mutmut's survivors in seqviz/limits.py (issue 28, scripts/mutation seqviz/limits.py): a bound a
server may set in its environment (SEQVIZ_LAB_KEEP_DAYS, SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S, SEQVIZ_CLASS_KEEP_DAYS) is
read only as a number within its range, at both ends exactly; anything else leaves the default."""

from __future__ import annotations

import pytest

from seqviz import limits

NAME = "SEQVIZ_TEST_BOUND"


def read(monkeypatch, text: str | None) -> float:
    if text is None:
        monkeypatch.delenv(NAME, raising=False)
    else:
        monkeypatch.setenv(NAME, text)
    return limits._number_from_env(NAME, 30.0, 1.0, 3650.0)


@pytest.mark.parametrize(("text", "value"), [("1", 1.0), ("3650", 3650.0), ("7.5", 7.5), (" 2 ", 2.0), ("1e3", 1000.0)])
def test_a_number_within_the_range_is_read_at_both_ends(monkeypatch, text, value):
    assert read(monkeypatch, text) == value


@pytest.mark.parametrize("text", ["0.999", "3650.001", "0", "-5", "nan", "inf", "-inf", "", "ten", "1,5", None])
def test_anything_else_leaves_the_default(monkeypatch, text):
    assert read(monkeypatch, text) == 30.0


def test_the_default_is_given_back_as_it_is_not_clamped():
    """A default outside its own range (no server sets one) is still what an unset variable gives."""
    assert limits._number_from_env("SEQVIZ_TEST_UNSET_BOUND", 0.5, 1.0, 2.0) == 0.5


def test_the_output_limit_of_a_long_source():
    assert limits.output_limit(1000) == 2005
