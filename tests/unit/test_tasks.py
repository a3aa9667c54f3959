"""Each task reads its own metrics (summary, one line for people, its classes) without generating data."""

from __future__ import annotations

import pytest

from seqviz.tasks import TASKS, task_labels

EMAILS = {"test_accuracy": 1.0, "twins_accuracy": 0.995, "twins_same_prediction": 0.0, "n_test": 10}
MEMORY = {"accuracy_by_distance": {str(d): d / 60 for d in range(1, 61)}, "accuracy_at_20": 1 / 3}
TRANSLATION = {"exact_match_le30": 0.99, "token_accuracy_le30": 0.999, "exact_match_ge25": 0.8,
               "chapter_pairs_exact": 6, "buckets": {}}


def test_summaries_pick_the_numbers_a_target_is_judged_by():
    assert TASKS["emails"].summary(EMAILS) == {"test_accuracy": 1.0, "twins_accuracy": 0.995,
                                               "twins_same_prediction": 0.0}
    assert TASKS["memory"].summary(MEMORY)["accuracy_at_60"] == 1.0
    assert list(TASKS["memory"].summary(MEMORY)) == [f"accuracy_at_{d}" for d in (1, 5, 10, 20, 40, 60)]
    assert TASKS["translation"].summary(TRANSLATION)["chapter_pairs_exact"] == 6


def test_describe_is_one_line():
    assert TASKS["emails"].describe(EMAILS) == "test 100.0%, twins 99.5% (same answer for both twins: 0.0%)"
    assert TASKS["memory"].describe(MEMORY).startswith("d=1: 1.7%, d=5: 8.3%")
    assert TASKS["translation"].describe(TRANSLATION) == (
        "exact ≤30 tokens 99.0% (tokens 99.9%), exact ≥25 tokens 80.0%, chapter pairs 6/6")
    for task in TASKS.values():  # missing numbers print as a dash, never fail
        assert "\\n" not in task.describe({}) and "–" in task.describe({})


def test_labels_without_data():
    assert task_labels("emails") == ("lost_parcel", "missing_item", "damaged_item", "billing")
    assert len(task_labels("memory")) >= 2 and task_labels("translation") is None
    with pytest.raises(KeyError, match="unknown task"):
        task_labels("poetry")

