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



def test_a_task_of_pairs_is_its_data_module_and_one_entry(monkeypatch):
    """A new sequence-to-sequence task (reverse a digit sequence) made from a data module alone: every translator
    trains on it, it draws batches and a translator is evaluated on it, with no other code."""
    import sys
    import types
    from dataclasses import dataclass

    import numpy as np

    from seqviz import families, runs
    from seqviz.tasks import PairTask

    @dataclass
    class Pair:
        src: list[str]
        tgt: list[str]

    def make_splits(seed):
        rng = np.random.default_rng(seed)
        pairs = [[str(d) for d in rng.integers(0, 10, size=rng.integers(3, 9))] for _ in range(60)]
        return types.SimpleNamespace(train=[Pair(p, p[::-1]) for p in pairs[:50]],
                                     test=[Pair(p, p[::-1]) for p in pairs[50:]])

    data = types.ModuleType("reverse_digits_data")
    data.make_splits, data.CHAPTER_PAIRS, data.MAX_TRAIN_SRC_LEN = make_splits, (("1 2 3", "3 2 1"),), 8
    data.LENGTH_BUCKETS, data.length_bucket = ((3, 8),), lambda n: "3-8"
    data.reference = lambda tokens: list(tokens)[::-1] if all(t.isdigit() for t in tokens) else None
    monkeypatch.setitem(sys.modules, "reverse_digits_data", data)
    class Reverse(PairTask):  # the task's one entry
        name, label, data = "reverse", "reverse a digit sequence", "reverse_digits_data"

    reverse = Reverse
    monkeypatch.setitem(TASKS, "reverse", reverse)

    assert issubclass(reverse, PairTask) and reverse.reference(["1", "2"]) == ["2", "1"]
    assert reverse.reference(["a"]) is None
    translators = families.trainable_on(reverse.kind)
    assert set(translators) == {name for name, f in families.FAMILIES.items() if f.translates}
    assert set(translators) == set(families.trainable_on(TASKS["translation"].kind))
    task = reverse(seed=1)
    batch = task.batch(np.random.default_rng(0), 4)
    assert batch["src"].shape[0] == 4 and batch["tgt"].shape[0] == 4
    spec = runs.RunSpec(task="reverse", family="dot", embedding=8, hidden=8, steps=1)
    from seqviz.models import build

    metrics = task.evaluate(build("dot", spec.model_config(task)).eval())
    assert metrics["n_le30"] == 10 and set(metrics["buckets"]) == {"3-8"} and len(metrics["chapter_pairs"]) == 1
    assert spec.label == "dot reverse, hidden 8, 1 steps"  # a translator now serves two tasks: the label says which


def test_each_family_trains_on_the_kinds_of_task_it_says():
    from seqviz import families

    assert families.trainable_on(TASKS["memory"].kind) == ("rnn", "gru", "lstm")
    assert "transformer" in families.trainable_on(TASKS["emails"].kind)
    assert "transformer-seq2seq" in families.trainable_on(TASKS["translation"].kind)
